"""Weight packing at build time (leka/optimize/prepack.py), A/B on the same winners: a demo model built from a
tuning db's winners with the packing left in the kernels (per call) and split out + folded at build time,
both checked against ONNX Runtime, then timed alternately in one process (e2e_timing.alternate); and each
folded kernel alone, whole against its compute part (min of alternating time_evaluator rounds).

Usage: python experiments/prepack_ab.py MODEL --db PATH [--threads 2] [--time 2]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

import numpy as np


def kernel_ms(funcs: dict[str, Any], target: Any, rounds: int = 7) -> dict[str, float]:
    """Min over `rounds` alternating rounds of each PrimFunc's mean time (ms) on random arguments."""
    import tvm

    timers = {}
    for name, f in funcs.items():
        lib = tvm.compile(f.with_attr("global_symbol", "main"), target=target)
        args = [tvm.runtime.tensor(np.random.default_rng(0).standard_normal([int(d) for d in p.shape])
                                   .astype(str(p.dtype))) for p in f.params]
        timers[name] = (lib.mod.time_evaluator("main", tvm.cpu(), number=50, repeat=1), args)
    best = {n: float("inf") for n in funcs}
    for _ in range(rounds):
        for n, (t, args) in timers.items():
            best[n] = min(best[n], t(*args).mean * 1e3)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a demo model name (leka.optimize.demo_models)")
    ap.add_argument("--db", required=True, help="tuning db holding the winners (from a `leka optimize` run)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time", type=float, default=2.0, help="seconds per build in the alternation")
    args = ap.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)

    from leka.optimize.build_job import _ort_runner, _vm_runner, compile_model, with_winners
    from leka.optimize.e2e_timing import alternate
    from leka.optimize.db import TuningDB, target_key
    from leka.optimize.demo_models import write
    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import prepack_weights, prepacked
    from leka.targets import get_target

    preset = get_target("host-cpu")
    path = write(args.model, tempfile.mkdtemp(prefix="prepack_ab_"))
    loaded, fused = import_model(path)
    with TuningDB(args.db) as db:
        wins = {s.key: (s, db.get(s.key, target_key(preset))) for s in kernel_specs(fused)}
    replace = {n: w.source for s, w in wins.values() if w and w.source for n in s.names}
    per_call = with_winners(fused, replace)
    folded = prepack_weights(per_call)
    runners = {"per-call": _vm_runner(compile_model(per_call, preset)),
               "prepacked": _vm_runner(compile_model(folded, preset)),
               "onnxruntime": _ort_runner(str(path), [i.name for i in loaded.inputs], args.threads)}
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(i.shape).astype(i.dtype) for i in loaded.inputs]
    want = runners["onnxruntime"](inputs)
    err = {n: max(float(np.abs(g - w).max()) for g, w in zip(runners[n](inputs), want))
           for n in ("per-call", "prepacked")}
    lat, _host = alternate(runners, inputs, min_time_s=args.time)
    kernels = [k.split(":")[0] for k in prepacked(folded) if k.endswith(":build")]
    # each such kernel whole (packing per call) against its split compute part (packed weight as an argument)
    ks = kernel_ms({**{f"{k} per-call": per_call[k] for k in kernels},
                    **{f"{k} prepacked": folded[f"{k}_prepacked"] for k in kernels}}, preset.tvm_target())
    print(json.dumps({"model": args.model, "winners": len(replace), "prepacked": prepacked(folded),
                      "max_abs_err_vs_ort": err, "latency": lat, "kernel_min_ms": ks, "load": os.getloadavg()},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
