"""Throughput of `leka bench run` with the local executor vs the Ray executor on this machine, and an
estimate of the full suite's wall time on N nodes from the measured per-sample costs.

For each method, the same fixed slice (`--limit`, spread over domains and patterns) is run into a fresh
store with each executor, in this process, through the same driver (leka.executors.fanout.run_fanout):
  local: one evaluator worker kept across samples;
  ray:   a local Ray instance (num_cpus=2, one `leka_timing` unit: one sample at a time on this node), one
         Ray task per sample, each with a fresh evaluator worker.
Printed: start-up (Ray instance), wall per sample of each executor (over the slice; the first sample, which
also starts the evaluator worker; the mean of the later ones), the Ray overhead per sample, and the
estimated wall time of the whole suite (all workloads x the methods measured) on N nodes, each node running
one sample at a time (leka_timing): samples x steady per-sample cost / N + start-up + one first sample.

Usage: python experiments/executor_throughput.py [--limit 6] [--method tvm-naive --method tvm-dlight]
       [--nodes 1,4,16,64] [--out experiments/results/executor_throughput_DATE.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run_slice(executor_name: str, method_name: str, tasks: list, trials: int) -> dict:
    from leka.bench.store import ResultStore
    from leka.evaluator import versions
    from leka.executors import get_executor
    from leka.executors.fanout import run_fanout
    from leka.methods import get_method

    t0 = time.perf_counter()
    ex = get_executor(executor_name)  # ray: starts a local instance (2 CPUs, no dashboard)
    startup = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d, ResultStore(Path(d) / "r.sqlite") as store:
        run_id = store.create_run(method_name, "host-cpu", {"executor": executor_name}, versions())
        stamps = [time.perf_counter()]
        try:
            out = run_fanout(store, run_id, tasks, get_method(method_name, {}), 1, ex, {},
                             on_outcome=lambda _o: stamps.append(time.perf_counter()),
                             target_spec="host-cpu", trials=trials, measure=True)
        finally:
            ex.close()
        recs = store.samples(run_id)
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return {"executor": executor_name, "method": method_name, "startup_s": startup, "wall_s": out.wall_s,
            "samples": len(recs), "per_sample_s": out.wall_s / max(1, len(recs)),
            # the first sample also pays the evaluator worker's start (and, on Ray, the worker process's imports)
            "first_sample_s": gaps[0] if gaps else None,
            # the mean of the later ones: the suite's total is a sum, and L3 samples make a long tail
            "steady_s": statistics.mean(gaps[1:]) if len(gaps) > 1 else None,
            "eval_s_median": statistics.median([r.get("eval_s") or 0.0 for r in recs]) if recs else None,
            "correct": sum(1 for r in recs if r.get("correct")),
            "keys": sorted((r["task"], bool(r.get("correct"))) for r in recs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=6, help="workloads in the slice (default 6)")
    ap.add_argument("--method", action="append", default=[], help="methods (default tvm-naive, tvm-dlight)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--nodes", default="1,4,16,64")
    ap.add_argument("--out", help="JSON file for the figures")
    a = ap.parse_args()
    from leka.bench.runner import Selection, select_tasks
    from leka.tasks import all_tasks

    methods = a.method or ["tvm-naive", "tvm-dlight"]
    tasks = select_tasks(Selection(limit=a.limit))
    suite = len(all_tasks())
    rows = [run_slice(ex, m, tasks, a.trials) for m in methods for ex in ("local", "ray")]
    print(f"slice: {len(tasks)} workloads ({', '.join(t.id for t in tasks)}), trials {a.trials}, measured\n")
    print(f"{'method':12s} {'executor':8s} {'start-up s':>10s} {'wall s':>8s} {'s/sample':>9s} {'first s':>8s} "
          f"{'steady s':>9s} {'correct':>8s}")
    for r in rows:
        print(f"{r['method']:12s} {r['executor']:8s} {r['startup_s']:10.1f} {r['wall_s']:8.1f} "
              f"{r['per_sample_s']:9.2f} {r['first_sample_s']:8.2f} {r['steady_s']:9.2f} "
              f"{r['correct']:>4d}/{r['samples']}")
    est, per_method = {}, {}
    for m in methods:
        loc, ray = [next(r for r in rows if r["method"] == m and r["executor"] == e) for e in ("local", "ray")]
        same = loc["keys"] == ray["keys"]
        per_method[m] = {"local_s": loc["per_sample_s"], "ray_s": ray["per_sample_s"],
                         "ray_overhead_s": ray["per_sample_s"] - loc["per_sample_s"],
                         "ratio_ray_over_local": ray["per_sample_s"] / loc["per_sample_s"],
                         "steady_overhead_s": ray["steady_s"] - loc["steady_s"],
                         "first_sample_overhead_s": ray["first_sample_s"] - loc["first_sample_s"],
                         "same_results": same}
        v = per_method[m]
        print(f"\n{m}: Ray / local wall per sample = {v['ratio_ray_over_local']:.2f}x (overhead "
              f"{v['ray_overhead_s']:+.2f} s/sample over the slice; steady state {v['steady_overhead_s']:+.2f} "
              f"s/sample, first sample {v['first_sample_overhead_s']:+.2f} s); same samples and correctness: {same}")
    ray_startup = statistics.median(r["startup_s"] for r in rows if r["executor"] == "ray")
    # one sample of every method per workload, at the steady Ray cost; each node pays one first sample
    per_sample_all = sum(r["steady_s"] for r in rows if r["executor"] == "ray")
    first = max(r["first_sample_s"] for r in rows if r["executor"] == "ray")
    print(f"\nfull suite estimate: {suite} workloads x {len(methods)} methods ({', '.join(methods)}) = "
          f"{suite * len(methods)} samples at the measured steady Ray cost per sample ({per_sample_all:.2f} s for "
          f"one of each method), one sample per node at a time, + start-up {ray_startup:.1f} s + first sample "
          f"{first:.1f} s:")
    for n in [int(x) for x in a.nodes.split(",")]:
        est[n] = suite * per_sample_all / n + ray_startup + first
        print(f"  {n:3d} node(s): {est[n] / 3600:7.2f} h")
    if a.out:
        Path(a.out).write_text(json.dumps({"rows": rows, "per_method": per_method, "suite_workloads": suite,
                                           "ray_startup_s": ray_startup, "estimate_s_by_nodes": est}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
