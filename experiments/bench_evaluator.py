"""Benchmark of the evaluator itself, measured in one run:

1. overhead per candidate excluding compile (goal <= 0.3 s median for a small L1 kernel):
   eval wall time minus the worker's compile time, over N evaluations;
2. reproducibility: the ratio between two independent measurements of the same candidate (two
   evaluators, two workers), for the candidate time and for the speedup (goal within 5 %).

Usage: python experiments/bench_evaluator.py [--candidate FILE] [-n 10] [--seed N] [--holdout]
(--seed N pins the inputs, as the evaluator did before every evaluation drew a fresh seed: run both to see
what fresh inputs cost.)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidate", default=str(ROOT / "examples" / "host-cpu" / "dwconv3x3.py"),
                    help="candidate file with a `# leka: task=... target=...` header")
    ap.add_argument("-n", type=int, default=10, help="evaluations for the overhead figure")
    ap.add_argument("--seed", type=int, default=None,
                    help="pin the input seed (inputs made once, as before fresh seeds per evaluation); default: fresh")
    ap.add_argument("--holdout", action="store_true", help="judge with the held-back input families too")
    args = ap.parse_args()

    from leka.candidate import load_candidate
    from leka.evaluator import EvalConfig, Evaluator
    from leka.tasks import get_task

    cand = load_candidate(args.candidate)
    task = get_task(cand.task)
    target = cand.target or "host-cpu"
    print(f"candidate {args.candidate} · task {task.id} · target {target}")
    t0 = time.perf_counter()
    cfg = EvalConfig(seed=args.seed, holdout=args.holdout)
    print(f"inputs: {'pinned seed ' + str(args.seed) if args.seed is not None else 'a fresh seed per evaluation'}"
          f"{', with the held-back families' if args.holdout else ''}")
    with Evaluator(target, cfg) as ev:
        ev.worker.request({"op": "ping"}, 60)  # worker start-up is paid once per run, not per candidate
        startup = time.perf_counter() - t0
        over, comp, waits, first = [], [], [], None
        for i in range(args.n):
            r = ev.evaluate(task, cand.source)
            if not r.correct:
                print(f"candidate failed: {r.status}: {r.error}")
                return 1
            over.append(r.overhead_s)
            waits.append(r.detail.get("inputs_wait_s") or 0.0)
            comp.append(r.compile_s)
            first = first or r
    with Evaluator(target, cfg) as ev2:
        second = ev2.evaluate(task, cand.source)
    print(f"worker start-up (once per evaluator): {startup:.2f} s")
    print(f"overhead per candidate excluding compile: median {statistics.median(over):.3f} s "
          f"(min {min(over):.3f}, max {max(over):.3f}, n={len(over)}; goal <= 0.3 s); "
          f"compile median {statistics.median(comp):.3f} s; waiting for inputs/references after the compile: "
          f"median {statistics.median(waits) * 1e3:.1f} ms, max {max(waits) * 1e3:.1f} ms")
    ratio_ms = first.candidate_ms / second.candidate_ms
    ratio_sp = first.speedup / second.speedup
    print(f"independent measurements of the same candidate: {first.candidate_ms:.4f} ms vs "
          f"{second.candidate_ms:.4f} ms → ratio {ratio_ms:.3f} ({abs(ratio_ms - 1):.1%} apart; goal within 5 %)")
    print(f"speedup vs {first.baseline}: {first.speedup:.2f}× vs {second.speedup:.2f}× → ratio {ratio_sp:.3f} "
          f"({abs(ratio_sp - 1):.1%} apart)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
