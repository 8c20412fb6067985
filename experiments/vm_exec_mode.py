"""How the model's main function runs on CPU: TVM's bytecode VM (one instruction dispatched per kernel call) vs
relax exec_mode "compiled" (the main function compiled to machine code), measured side by side in one run.

Per model: `leka optimize` (in this process, --budget as given, a fresh tuning db), the winners it built the
artifact from captured, then the same winners built both ways and timed alternately over rounds with ONNX
Runtime (leka.optimize.e2e_timing.alternate, the comparison `leka optimize` itself makes), outputs compared.

Usage: python experiments/vm_exec_mode.py [--models kws-lstm,kws-gru,...] [--budget minutes=3] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from holdout_models import catalogue  # noqa: E402


def optimize_capturing_winners(model: Path, out: Path, budget: str) -> dict[str, str]:
    """`leka optimize MODEL` in this process; the winners ({kernel: TVMScript}) of its last build."""
    from leka.cli.main import main as leka_main
    from leka.optimize import pipeline

    seen: dict[str, dict[str, str]] = {}
    original = pipeline._run_build_job

    def capture(opts: Any, loaded: Any, preset: Any, replace: dict[str, str], *a: Any, **kw: Any) -> Any:
        seen["replace"] = dict(replace)
        return original(opts, loaded, preset, replace, *a, **kw)

    pipeline._run_build_job = capture
    try:
        rc = leka_main(["optimize", str(model), "-o", str(out / f"{model.stem}.leka"), "--budget", budget,
                        "--db", str(out / f"{model.stem}.db"), "--quiet"])
    finally:
        pipeline._run_build_job = original
    if rc not in (0, None) or "replace" not in seen:
        raise SystemExit(f"leka optimize {model.name} failed (exit {rc})")
    return seen["replace"]


def compare(model: Path, replace: dict[str, str], threads: int, time_s: float) -> dict[str, Any]:
    import numpy as np

    from leka.optimize import build_job, e2e_timing
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import prepack_weights
    from leka.targets import get_target

    preset = get_target("host-cpu")
    loaded, fused = import_model(model)
    winners = prepack_weights(build_job.with_winners(fused, replace))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([int(d) for d in i.shape]).astype(i.dtype) for i in loaded.inputs]
    runners, build_s = {}, {}
    for mode in ("bytecode", "compiled"):
        t0 = time.perf_counter()
        runners[mode] = build_job._vm_runner(build_job.compile_model(winners, preset, exec_mode=mode))
        build_s[mode] = time.perf_counter() - t0
    outs = {m: r(inputs) for m, r in runners.items()}
    diff = max(float(np.abs(a - b).max()) for a, b in zip(outs["bytecode"], outs["compiled"]))
    runners["onnxruntime"] = build_job._ort_runner(str(model), [i.name for i in loaded.inputs], threads)
    lat, _host = e2e_timing.alternate(runners, inputs, min_time_s=time_s)
    return {"latency_ms": {k: v["median_ms"] for k, v in lat.items()},
            "range_rel": {k: v["range_rel"] for k, v in lat.items()}, "build_s": build_s,
            "max_abs_diff": diff, "kernels_replaced": len(replace)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="kws-lstm,kws-gru,cnn-qop,light_shufflenet")
    ap.add_argument("--budget", default="minutes=3")
    ap.add_argument("--time-s", type=float, default=2.0, help="seconds per build in the comparison")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "results" / f"vm_exec_mode_{time.strftime('%Y-%m-%d')}"))
    args = ap.parse_args()
    threads = int(os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1)))
    out = Path(args.out)
    if (out / "results.json").exists():
        raise SystemExit(f"{out} holds results already: give another --out")
    out.mkdir(parents=True, exist_ok=True)
    models, _notes = catalogue()
    rows = []
    print(f"load average before: {os.getloadavg()}; threads {threads}", flush=True)
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            path = models[name](Path(tmp))
            replace = optimize_capturing_winners(path, Path(tmp), args.budget)
            row = {"model": name, **compare(path, replace, threads, args.time_s), "load": os.getloadavg()[0]}
        lat = row["latency_ms"]
        print(f"{name}: bytecode {lat['bytecode']:.4f} ms, compiled {lat['compiled']:.4f} ms "
              f"(bytecode/compiled {lat['bytecode'] / lat['compiled']:.2f}), ORT {lat['onnxruntime']:.4f} ms; "
              f"opt/ORT {lat['bytecode'] / lat['onnxruntime']:.2f} -> {lat['compiled'] / lat['onnxruntime']:.2f}; "
              f"range across rounds {row['range_rel']}; outputs differ by {row['max_abs_diff']:.2g}", flush=True)
        rows.append(row)
    (out / "results.json").write_text(json.dumps({"budget": args.budget, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
