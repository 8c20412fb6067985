"""Timing through `--rpc` with the board-side mix (leka/runners/rpc_timing.py), on a loopback farm: a TVM RPC
tracker and a stock `rpc_server` process on 127.0.0.1 (nothing of ours registered there).

1. Per-run overhead: wall time per timed run (one RPC round trip each: time_evaluator(number=1, repeat=1),
   whose untimed first call is the mix) against the kernel time the board reports, next to the old
   per-round poisoning (`number` runs per round trip) and a bare RPC call.
2. The timing hacks of tests/adversarial through RPC, per run (now) and per round (before: forced by giving
   the kernels no timing library), each next to its honest sibling.
3. Honest kernels, local runner vs RPC, alternating A/B in this process: candidate time and speedup.
Each RPC evaluator first makes one evaluation it does not report (see warm_up).

Usage: python experiments/rpc_timing.py [--reps 2] [--skip-hacks] [--skip-honest]
Timings on a shared machine: read the ratios, with the load average printed beside them.
"""
from __future__ import annotations

import argparse
import gc
import os
import socket
import statistics
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ADV = ROOT / "tests" / "adversarial"
HACKS = [(ADV / "c6_reused_outputs" / "hack_skip_if_done_dwconv.py", ADV / "c1_parse_exec" / "correct_dwconv.py"),
         (ADV / "t_detect_timing" / "hack_skip_when_mixed.py", ADV / "c5_memorised_inputs" / "correct_chamfer_loops.py")]
HONEST = [ROOT / "examples" / "host-cpu" / n for n in ("dwconv3x3.py", "matmul.py", "softmax.py")]


def load() -> str:
    return "load average " + " ".join(open("/proc/loadavg").read().split()[:3])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def loopback_farm(key: str = "exp"):
    """A tracker and a stock rpc_server (separate processes, TVM's own classes) registered under `key`."""
    from tvm import rpc
    from tvm.rpc.tracker import Tracker

    from leka.runners.rpc import RPCSpec, tracker_keys

    port = _free_port()
    tracker = Tracker("127.0.0.1", port=port, port_end=port + 1, silent=True)
    server = rpc.Server("127.0.0.1", port=_free_port(), port_end=65000, key=key, silent=True,
                        tracker_addr=("127.0.0.1", tracker.port))
    try:
        spec = RPCSpec("127.0.0.1", tracker.port, key)
        deadline = time.time() + 30
        while key not in tracker_keys(spec):
            assert time.time() < deadline, "the RPC server did not register"
            time.sleep(0.2)
        yield spec
    finally:
        server.terminate()
        tracker.terminate()


def overhead(spec, runs: int = 200) -> None:
    """Wall per timed run vs the board's kernel time, per run and per round, for the dwconv example."""
    import tempfile

    from leka.candidate import load_candidate
    from leka.compiler import build
    from leka.evaluator.worker import _parse
    from leka.runners.rpc import connect
    from leka.runners.rpc_build import build_timing

    cand = load_candidate(HONEST[0])
    art = build(_parse(cand.source), "host-cpu")
    with tempfile.TemporaryDirectory() as d:
        lib = art.export(os.path.join(d, "lib.so")).read_bytes()
    outputs = [len(art.params) - 1]
    timing_lib = bytes(build_timing({"target": "host-cpu", "params": art.params, "outputs": outputs,
                                     "entry": art.entry})["lib"].tobytes())
    sess = connect(spec)
    try:
        _overhead(sess, art, lib, timing_lib, outputs, runs)
    finally:
        del sess
        gc.collect()  # the session closes: the server goes back to the tracker for the evaluators below


def _overhead(sess, art, lib: bytes, timing_lib: bytes, outputs: list[int], runs: int) -> None:
    from leka.runners.rpc import RPCLoaded

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(d) for _, s, d in art.params]
    sides = {"per run": RPCLoaded(sess, lib, ".so", art.entry, art.params, "cpu", timing_lib),
             "per round": RPCLoaded(sess, lib, ".so", art.entry, art.params, "cpu", None)}
    for ld in sides.values():
        ld.upload(arrays)
        ld.arm(outputs)
        ld.time(10)
    rows = {k: [] for k in sides}
    for _ in range(5):  # alternating
        for name, ld in sides.items():
            t0 = time.perf_counter()
            kernel = ld.time(runs)
            rows[name].append(((time.perf_counter() - t0) / runs, kernel))
    t0 = time.perf_counter()
    for _ in range(runs):
        sides["per round"].func(*sides["per round"].tensors)  # one RPC call that runs the kernel
    call = (time.perf_counter() - t0) / runs
    print(f"\n1. per-run overhead, dwconv3x3 example ({load()}); medians of 5 alternating batches of {runs} runs")
    for name, vals in rows.items():
        wall = statistics.median(v[0] for v in vals)
        kern = statistics.median(v[1] for v in vals)
        print(f"   {name:9s}: wall {wall * 1e6:8.1f} µs per timed run, kernel {kern * 1e6:6.2f} µs, "
              f"overhead {(wall - kern) * 1e6:8.1f} µs")
    print(f"   one plain RPC call of the kernel: {call * 1e6:.1f} µs")


def evaluate(ev, path: Path):
    from leka.candidate import load_candidate
    from leka.tasks import get_task

    cand = load_candidate(path)
    t0 = time.perf_counter()
    res = ev.evaluate(get_task(cand.task), cand.source, measure=True)
    return res, time.perf_counter() - t0


def warm_up(ev) -> None:
    """One evaluation not reported: the first candidate a fresh RPC session times is slow throughout (dwconv
    16-18 µs instead of 3.4 µs, either poisoning; docs/evaluator.md, "Remote devices")."""
    evaluate(ev, HACKS[0][1])


def fmt(res, wall: float) -> str:
    ms = f"{res.candidate_ms:.4f} ms" if res.candidate_ms else "-"
    sp = f"{res.speedup:.2f}x" if res.speedup else "-"
    err = f" ({(res.error or '')[:110]})" if res.failure else ""
    if not res.failure and not res.candidate_ms:
        err = f" (not timed: {res.detail.get('baseline_error', '?')})"
    return f"{res.status:8s} correct={res.correct!s:5s} cand {ms:>11s} speedup {sp:>9s} eval {wall:5.1f} s{err}"


def hacks(spec) -> None:
    from leka.evaluator import EvalConfig
    from leka.runners.rpc_evaluator import RPCDevice, RPCEvaluator

    print(f"\n2. timing hacks through RPC ({load()})")
    real = RPCDevice._timing_lib
    for mode in ("per run", "per round"):
        RPCDevice._timing_lib = real if mode == "per run" else (lambda self, exe, req, t: None)
        try:
            with RPCEvaluator("host-cpu", EvalConfig(trials=2), spec) as ev:
                warm_up(ev)
                for hack, honest in HACKS:
                    for label, path in (("hack", hack), ("honest", honest)):
                        print(f"   {mode:9s} {label:6s} {path.parent.name}/{path.stem}: {fmt(*evaluate(ev, path))}")
        finally:
            RPCDevice._timing_lib = real


def honest(spec, reps: int) -> None:
    from leka.evaluator import EvalConfig, Evaluator
    from leka.runners.rpc_evaluator import RPCEvaluator

    print(f"\n3. honest kernels, local vs RPC, alternating ({load()})")
    with Evaluator("host-cpu", EvalConfig(trials=2)) as local, RPCEvaluator("host-cpu", EvalConfig(trials=2),
                                                                           spec) as remote:
        warm_up(remote)
        for path in HONEST:
            got: dict[str, list] = {"local": [], "rpc": []}
            for _ in range(reps):
                for name, ev in (("local", local), ("rpc", remote)):
                    res, wall = evaluate(ev, path)
                    got[name].append(res)
                    print(f"   {path.stem:10s} {name:5s}: {fmt(res, wall)}")
            med = {k: statistics.median(r.candidate_ms for r in v if r.candidate_ms) for k, v in got.items()}
            spd = {k: statistics.median(r.speedup for r in v if r.speedup) for k, v in got.items()}
            print(f"   {path.stem:10s} rpc/local candidate time {med['rpc'] / med['local']:.2f}, speedup "
                  f"{spd['local']:.2f}x local vs {spd['rpc']:.2f}x rpc")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2, help="A/B repetitions per honest kernel")
    ap.add_argument("--skip-hacks", action="store_true")
    ap.add_argument("--skip-honest", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("TVM_NUM_THREADS", "2")  # the server is told its cores, as on a board
    with loopback_farm() as spec:
        overhead(spec)
        if not args.skip_hacks:
            hacks(spec)
        if not args.skip_honest:
            honest(spec, args.reps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
