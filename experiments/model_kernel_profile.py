"""Where a model's time goes: each extracted kernel's default build against the best candidate the offline
CPU rules produce for it (no search, first variants of every rule that claims it), timed alternately in one
process, weighted by its calls, next to ONNX Runtime's whole-model time measured in the same rounds.

  python experiments/model_kernel_profile.py kws-dscnn [--variants 3] [--rounds 15] [--rules a,b]

Prints per kernel: weight, default ms, best rule ms (and which rule/knobs), speedup, and the totals
(sum of weight x ms) against ORT. Candidates are checked against the default build's output before timing;
a wrong one is listed and skipped. The load average is printed before and after (the host is shared).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# TVM's own default pool size was 1 on a 2-core host (kernels timed on one core against ONNX Runtime on all):
# both get every core unless TVM_NUM_THREADS says otherwise
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))


def _args(spec: Any, rng: np.random.Generator) -> list[Any]:
    import tvm

    return [tvm.runtime.tensor(rng.standard_normal(s).astype(d) if np.dtype(d).kind == "f" else np.zeros(s, d),
                               tvm.cpu()) for _n, s, d, _r in spec.args]


def _compile(func: Any) -> Callable[..., Any]:
    import tvm

    from leka.targets import get_target

    exe = tvm.compile(tvm.IRModule({"main": func}), target=get_target("host-cpu").tvm_target())
    return exe


def candidates(spec: Any, per_rule: int, only: set[str] | None) -> list[tuple[str, Any]]:
    """(label, PrimFunc) of the first `per_rule` variants of each CPU rule that claims the kernel."""
    import tvm

    from leka.ir import CandidateIR
    from leka.optimize.extract import make_task
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import CPU_RULES
    from leka.targets import get_target

    preset = get_target("host-cpu")
    task = make_task(spec, preset)
    ctx = RuleContext.build(task, CandidateIR.initial(task), preset, [])
    out = []
    for rule in CPU_RULES:
        if only and rule.NAME not in only:
            continue
        try:
            irs = rule.apply(ctx) or []
        except Exception as e:  # a rule crashing on a real kernel is a finding, not a stop
            print(f"   {rule.NAME} raised {type(e).__name__}: {str(e)[:120]}")
            continue
        for ir in irs[:per_rule]:
            try:
                func = tvm.script.from_source(ir.to_tvmscript("host-cpu")).with_attr("global_symbol", "main")
            except Exception as e:  # an ill-formed schedule result is a finding too
                print(f"   {rule.NAME} {ir.notes.get('knobs')}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                continue
            out.append((f"{rule.NAME} {ir.notes.get('knobs')}", func))
    return out


def time_alternating(fns: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Per-call ms of each timer (returning ms per call), every timer once per round in a shuffled order:
    the minimum over rounds (STAT=median for the median): on a shared, overloaded host the minimum is
    the estimate of the code's own speed that the other processes disturb least."""
    samples: dict[str, list[float]] = {n: [] for n in fns}
    order = list(fns)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            samples[name].append(fns[name]())
    pick = statistics.median if os.environ.get("STAT") == "median" else min
    return {n: pick(v) for n, v in samples.items()}


def _timer(exe: Any, args: list[Any]) -> Callable[[], float]:
    """A native timing loop (time_evaluator): no Python call overhead (~10 us) in a kernel's time."""
    import tvm

    exe["main"](*args)
    t = exe.mod.time_evaluator("main", tvm.cpu(), number=1, repeat=1)(*args).mean
    ev = exe.mod.time_evaluator("main", tvm.cpu(), number=max(1, int(0.003 / max(t, 1e-7))), repeat=1)
    return lambda: ev(*args).mean * 1e3


def profile_kernel(spec: Any, per_rule: int, rounds: int, only: set[str] | None) -> dict[str, Any]:
    from leka.optimize.extract import _parse_trusted

    rng = np.random.default_rng(0)
    args = _args(spec, rng)
    n_out = sum(1 for a in spec.args if a[3] == "output")
    default = _compile(_parse_trusted(spec.script))
    default["main"](*args)
    want = [a.numpy().copy() for a in args[-n_out:]]
    fns: dict[str, Callable[[], None]] = {"default": _timer(default, args)}
    wrong = []
    for label, func in candidates(spec, per_rule, only):
        try:
            exe = _compile(func)
        except Exception as e:
            wrong.append(f"{label}: compile {type(e).__name__}")
            continue
        for a in args[-n_out:]:
            a.copyfrom(np.zeros(a.shape, a.dtype))
        exe["main"](*args)
        got = [a.numpy() for a in args[-n_out:]]
        if not all(np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(1.0, float(np.abs(w).max()))) for g, w in
                   zip(got, want)):
            wrong.append(f"{label}: wrong")
            continue
        fns[label] = _timer(exe, args)
    times = time_alternating(fns, rounds)
    best = min((k for k in times if k != "default"), key=times.get, default="default")
    return {"default": times["default"], "best": times[best], "best_label": best, "wrong": wrong, "times": times}


def ort_ms(model: Path, rounds: int) -> float:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = os.cpu_count() or 1
    # ORT's workers spin as users run them (turned off, it ran up to 1.5x slower on a 2-vCPU VM: docs/optimize.md)
    sess = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in i.shape])
             .astype(np.float32) for i in sess.get_inputs()}
    import time

    def run() -> float:
        t0 = time.perf_counter()
        for _ in range(20):
            sess.run(None, feeds)
        return (time.perf_counter() - t0) / 20 * 1e3
    run()
    return time_alternating({"ort": run}, rounds)["ort"]


def main() -> int:
    from leka.optimize.demo_models import write
    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a demo model name (leka.optimize.demo_models) or an .onnx path")
    ap.add_argument("--variants", type=int, default=3, help="variants per rule (default 3)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rules", help="only these rule names, comma-separated")
    ap.add_argument("--kernels", help="only kernels whose name contains one of these (comma-separated)")
    ap.add_argument("--all", action="store_true", help="print every candidate's time, not only the best")
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    path = Path(a.model) if a.model.endswith(".onnx") else write(a.model, tempfile.mkdtemp())
    _loaded, fused = import_model(path)
    only = set(a.rules.split(",")) if a.rules else None
    tot_def = tot_best = 0.0
    for spec in kernel_specs(fused):
        if a.kernels and not any(k in spec.name for k in a.kernels.split(",")):
            continue
        r = profile_kernel(spec, a.variants, a.rounds, only)
        tot_def += spec.weight * r["default"]
        tot_best += spec.weight * r["best"]
        print(f"{spec.name[:40]:40s} x{spec.weight} default {r['default']:.4f} ms  best {r['best']:.4f} ms "
              f"({r['default'] / r['best']:.2f}x) {r['best_label']}", flush=True)
        for label, ms in sorted(r["times"].items(), key=lambda kv: kv[1]) if a.all else ():
            print(f"    {ms:.4f} ms {label}")
        for w in r["wrong"]:
            print(f"    ! {w}")
    ort = ort_ms(path, a.rounds * 3)
    print(f"sum of kernels: default {tot_def:.3f} ms, best rule {tot_best:.3f} ms; ONNX Runtime {ort:.3f} ms; "
          f"best/ORT {tot_best / ort:.2f}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
