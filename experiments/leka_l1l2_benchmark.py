"""LEKA (offline proposer) vs tvm-naive and tvm-dlight on a fixed L1+L2 host-cpu subset.

    .venv/bin/python experiments/leka_l1l2_benchmark.py                # 60 workloads
    .venv/bin/python experiments/leka_l1l2_benchmark.py --n 12 --agent-budget compiles=2,measurements=2   # a quick look

The subset is chosen deterministically: L1+L2 tasks grouped by domain, each domain's tasks ordered
round-robin over its patterns (ids sorted), then domains taken round-robin until N. Each method's
final answer per task is one sample; the script prints Correct@1, Fast@1.0, Fast@2.0, the geometric
mean speedup (all vs tvm-naive, formulas of leka.bench.metrics) and the budget each method used, side
by side. Per-task records go to a JSONL file (default .leka/experiments/leka_l1l2.jsonl); a rerun skips
tasks already there, and the agent's own runs resume from their checkpoints.
Goals (issue): LEKA Fast@1.0 >= 90 %, geomean >= 5x. The script reports what it measures.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

METHODS = ("tvm-naive", "tvm-dlight", "leka")


def select_subset(n: int) -> list[Any]:
    from leka.tasks import all_tasks

    by_domain: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for t in sorted(all_tasks(), key=lambda t: t.id):
        if t.level in (1, 2):
            by_domain[t.domain][t.pattern].append(t)
    queues: dict[str, list[Any]] = {}
    for domain, patterns in sorted(by_domain.items()):
        order: list[Any] = []
        lists = [patterns[p] for p in sorted(patterns)]
        for i in range(max(len(x) for x in lists)):
            order += [x[i] for x in lists if i < len(x)]
        queues[domain] = order
    picked: list[Any] = []
    while len(picked) < n and any(queues.values()):
        for domain in sorted(queues):
            if queues[domain] and len(picked) < n:
                picked.append(queues[domain].pop(0))
    return picked


def run_method(name: str, options: dict[str, Any], task: Any, target: Any, evaluator: Any, run_id: str) -> dict:
    from leka.budget import Budget
    from leka.methods import MethodContext, get_method

    budget = Budget.unlimited()
    method = get_method(name, options)
    ctx = MethodContext(evaluator=evaluator, budget=budget, store=None, run_id=run_id, options=options)
    t0 = time.monotonic()
    try:
        samples = method.run(task, target, ctx)
        rec = samples[-1].to_record()
    except Exception as e:  # a method that breaks on one task is a failed sample, not a dead experiment
        rec = {"task": task.id, "compiled": False, "correct": False, "failure": "method_error",
               "error": f"{type(e).__name__}: {e}"[:500], "budget": budget.spent()}
    rec.update(task=task.id, method=name, wall_s=round(time.monotonic() - t0, 2), level=task.level,
               domain=task.domain, pattern=task.pattern)
    rec["budget"] = rec.get("budget") or budget.spent()
    return rec


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}%" if pct else f"{v:.2f}x"


def report(records: list[dict[str, Any]]) -> None:
    from leka.bench.metrics import summarize

    print(f"\n{'method':<12}{'tasks':>6}{'Correct@1':>11}{'Fast@1.0':>10}{'Fast@2.0':>10}{'geomean':>10}"
          f"{'compiles':>10}{'measures':>10}{'wall min':>10}")
    for m in METHODS:
        rs = [r for r in records if r["method"] == m]
        if not rs:
            continue
        s = summarize(rs, fast_ps=(1.0, 2.0))
        comp = sum((r.get("budget") or {}).get("compiles", 0) or 0 for r in rs)
        meas = sum((r.get("budget") or {}).get("measurements", 0) or 0 for r in rs)
        wall = sum(r.get("wall_s", 0) for r in rs) / 60
        print(f"{m:<12}{s.tasks:>6}{_fmt(s.correct_at_1, True):>11}{_fmt(s.fast_at['Fast@1.0'], True):>10}"
              f"{_fmt(s.fast_at['Fast@2.0'], True):>10}{_fmt(s.geomean_speedup):>10}{comp:>10.0f}{meas:>10.0f}"
              f"{wall:>10.1f}")
    by_dom: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r["method"] == "leka" and r.get("correct") and r.get("speedup"):
            by_dom[r["domain"]].append(r["speedup"])
    if by_dom:
        from leka.bench.metrics import geomean

        print("leka geomean by domain: " + ", ".join(f"{d} {geomean(v):.2f}x (n={len(v)})"
                                                     for d, v in sorted(by_dom.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="workloads (default 60)")
    ap.add_argument("--out", default=".leka/experiments/leka_l1l2.jsonl")
    ap.add_argument("--agent-budget", default="compiles=4,measurements=4", help="per-task LEKA budget")
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--trials", type=int, default=3, help="correctness trials per candidate")
    ap.add_argument("--run-id", default="exp-l1l2", help="prefix of the agent run ids (resume key)")
    ap.add_argument("--report-only", action="store_true", help="print the table from --out, run nothing")
    args = ap.parse_args()

    from leka.evaluator import EvalConfig, Evaluator
    from leka.targets import get_target

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    if args.report_only:
        report(records)
        return
    done = {(r["task"], r["method"]) for r in records}
    tasks = select_subset(args.n)
    domains = sorted({t.domain for t in tasks})
    print(f"{len(tasks)} workloads (L1 {sum(t.level == 1 for t in tasks)}, L2 {sum(t.level == 2 for t in tasks)}) "
          f"across {len(domains)} domains: {', '.join(domains)}", flush=True)
    target = get_target("host-cpu")
    leka_opts = {"k": args.k, "max_steps": args.max_steps, "agent_budget": args.agent_budget}
    cfg = EvalConfig(trials=args.trials, min_rounds=5, min_time_s=0.05)
    with Evaluator(target, cfg) as ev, out.open("a") as sink:
        for i, task in enumerate(tasks, 1):
            for m in METHODS:
                if (task.id, m) in done:
                    continue
                rec = run_method(m, leka_opts if m == "leka" else {}, task, target, ev, args.run_id)
                records.append(rec)
                sink.write(json.dumps(rec, default=str) + "\n")
                sink.flush()
                sp = rec.get("speedup")
                print(f"[{i}/{len(tasks)}] {task.id:<40} {m:<11} "
                      f"{'ok ' if rec.get('correct') else (rec.get('failure') or 'fail')[:12]:<13}"
                      f"{_fmt(sp) if isinstance(sp, (int, float)) else '-':>9}  {rec['wall_s']:.0f}s", flush=True)
    report([r for r in records if r["task"] in {t.id for t in tasks}])


if __name__ == "__main__":
    main()
