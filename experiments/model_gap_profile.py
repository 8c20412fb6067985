"""Where an optimised build loses to ONNX Runtime inside the model: each kernel call's time in the running model
(TVM's bytecode VM with an instrument around every call) next to the same call timed alone on its own arguments
(hot caches), and ONNX Runtime's per-node profile of the same model, all in one process, 2 threads each.

  python experiments/model_gap_profile.py MODEL [--budget minutes=3] [--replace winners.json] [--calls 30]

MODEL is a catalogue name of experiments/holdout_models.py or an .onnx path. Without --replace, `leka optimize`
runs first (fresh db) and its winners are saved next to the printout (--save). Prints per kernel: calls, in-model
µs, alone µs, in/alone; the totals (sum in model, the model's call time without the instrument, ONNX Runtime's
node sum and call time) and ONNX Runtime's time by operator type. ONNX Runtime's profiler adds its own cost
per node (tv-squeezenet1_1: node sum 523-662 us against 296 us a call unprofiled): read its per-operator
figures as shares, not times. The instrument costs TVM's side a few us a call too (kernels in model vs whole call).

What it showed first (tv-squeezenet1_1, 2026-12-07, znver4): the kernels timed alone summed to 533 us against the
model's 585 us a call, so the optimised build's gap to ONNX Runtime (296 us) was in its kernels, not between them;
the largest, the 512->1000 classifier on the 3x3 map, 151 us (cpu.pointwise_dot since).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

from holdout_models import catalogue  # noqa: E402
from vm_exec_mode import optimize_capturing_winners  # noqa: E402


def _call_ms(fn: Any, calls: int) -> float:
    """Median ms of `calls` timed calls after 3 warm ones."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def tvm_in_model(model: Path, replace: dict[str, str], inputs: list[np.ndarray], calls: int) -> dict[str, Any]:
    """Per call index: (symbol, median µs in the model, µs alone on its arguments); the model's ms a call."""
    import tvm
    from tvm import relax

    from leka.optimize import build_job
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import prepack_weights
    from leka.targets import get_target

    _loaded, fused = import_model(model)
    exe = build_job.compile_model(prepack_weights(build_job.with_winners(fused, replace)), get_target("host-cpu"),
                                  exec_mode="bytecode")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(exe, dev)
    args = [tvm.runtime.tensor(x, dev) for x in inputs]
    whole_ms = _call_ms(lambda: vm["main"](*args), calls)
    trace: list[tuple[str, float]] = []
    captured: dict[int, tuple[Any, list[Any]]] = {}
    start: list[float] = [0.0]

    def instrument(func: Any, symbol: str, before: bool, _ret: Any, *call_args: Any) -> int:
        if before:
            if len(trace) not in captured and not symbol.startswith("vm."):
                captured[len(trace)] = (func, list(call_args))
            start[0] = time.perf_counter()
        else:
            trace.append((symbol, (time.perf_counter() - start[0]) * 1e6))
        return 0

    vm.set_instrument(instrument)
    per_index: dict[int, list[float]] = defaultdict(list)
    symbols: dict[int, str] = {}
    for _ in range(calls):
        trace.clear()
        vm["main"](*args)
        for i, (sym, us) in enumerate(trace):
            per_index[i].append(us)
            symbols[i] = sym
    rows = []
    for i in sorted(per_index):
        alone = None
        if i in captured:
            func, call_args = captured[i]
            alone = _call_ms(lambda: func(*call_args), max(5, calls // 3)) * 1e3
        rows.append({"index": i, "symbol": symbols[i], "in_model_us": statistics.median(per_index[i]),
                     "alone_us": alone})
    return {"whole_ms": whole_ms, "rows": rows}


def ort_profile(model: Path, names: list[str], inputs: list[np.ndarray], calls: int) -> dict[str, Any]:
    """ONNX Runtime as users run it (2 threads, spinning): ms a call, then its profiler's per-node medians."""
    import onnxruntime as ort

    def session(profile: bool) -> Any:
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(os.environ["TVM_NUM_THREADS"])
        so.enable_profiling = profile
        so.profile_file_prefix = str(Path(tempfile.gettempdir()) / "gap_ort")
        return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])

    feed = dict(zip(names, inputs))
    plain = session(False)
    whole_ms = _call_ms(lambda: plain.run(None, feed), calls)
    prof = session(True)
    for _ in range(calls):
        prof.run(None, feed)
    events = json.loads(Path(prof.end_profiling()).read_text())
    per_node: dict[str, list[float]] = defaultdict(list)
    op_of: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            node = e["name"][: -len("_kernel_time")]
            per_node[node].append(float(e["dur"]))
            op_of[node] = e.get("args", {}).get("op_name", "?")
    by_op: dict[str, float] = defaultdict(float)
    for node, durs in per_node.items():
        by_op[op_of[node]] += statistics.median(durs[3:] or durs)
    return {"whole_ms": whole_ms, "node_sum_us": sum(by_op.values()), "by_op_us": dict(by_op)}


def report(name: str, tvm_side: dict[str, Any], ort_side: dict[str, Any]) -> None:
    rows = tvm_side["rows"]
    kernels = [r for r in rows if r["alone_us"] is not None]
    print(f"\n{name}: {len(rows)} calls in main, {len(kernels)} timed alone")
    print(f"{'#':>3} {'symbol':44} {'in model us':>11} {'alone us':>9} {'in/alone':>8}")
    for r in sorted(kernels, key=lambda r: -r["in_model_us"]):
        print(f"{r['index']:3d} {r['symbol'][:44]:44} {r['in_model_us']:11.1f} {r['alone_us']:9.1f} "
              f"{r['in_model_us'] / max(r['alone_us'], 1e-9):8.2f}")
    in_sum = sum(r["in_model_us"] for r in rows)
    alone_sum = sum(r["alone_us"] for r in kernels)
    print(f"TVM: whole call {tvm_side['whole_ms'] * 1e3:.1f} us; kernels in model {in_sum:.1f} us "
          f"(instrumented); alone {alone_sum:.1f} us")
    print(f"ORT: whole call {ort_side['whole_ms'] * 1e3:.1f} us; node sum {ort_side['node_sum_us']:.1f} us")
    for op, us in sorted(ort_side["by_op_us"].items(), key=lambda kv: -kv[1]):
        print(f"  ORT {op:28} {us:9.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--budget", default="minutes=3")
    ap.add_argument("--replace", help="winners JSON ({kernel: TVMScript}) from an earlier --save")
    ap.add_argument("--save", help="write the winners `leka optimize` built with here")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    from leka.optimize.importer import import_model

    with tempfile.TemporaryDirectory() as tmp:
        models, _ = catalogue()
        path = models[args.model](Path(tmp)) if args.model in models else Path(args.model)
        if args.replace:
            replace = json.loads(Path(args.replace).read_text())
        else:
            replace = optimize_capturing_winners(path, Path(tmp), args.budget)
            if args.save:
                Path(args.save).write_text(json.dumps(replace))
        loaded, _ = import_model(path)
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal([int(d) for d in i.shape]).astype(i.dtype) for i in loaded.inputs]
        print(f"load average {os.getloadavg()}; threads {os.environ['TVM_NUM_THREADS']}", flush=True)
        tvm_side = tvm_in_model(path, replace, inputs, args.calls)
        ort_side = ort_profile(path, [i.name for i in loaded.inputs], inputs, args.calls)
        report(args.model, tvm_side, ort_side)
    return 0


if __name__ == "__main__":
    sys.exit(main())
