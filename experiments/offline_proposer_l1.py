"""Offline proposer on the L1 suite (host-cpu): naive vs best proposed candidate, through the evaluator.

For a deterministic sample of L1 tasks (default 60: the example tasks, then one task per pattern,
taking the domains in turn; --sample 0 runs all): ask "leka-offline-rules" for an algorithm rewrite
(--k-alg), then for k schedule proposals per round on the task and on the rewrite, evaluate them
(correctness + timing against tvm-naive in the evaluator's worker, default EvalConfig), feed the
results back as history for the next round, keep the best correct candidate and evaluate it once more
(the search's maximum of noisy ratios is biased upwards; the fresh ratio is the one reported; when it
differs from the search's by more than 25 %, two more fresh evaluations are made and the median of the
three is reported). Prints one
row per task and the share of tasks with a correct candidate faster than tvm-naive.

    .venv/bin/python experiments/offline_proposer_l1.py [--k 3] [--rounds 2] [--sample N] [--match TEXT]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from leka.bench import metrics  # noqa: E402
from leka.evaluator import EvalConfig, Evaluator  # noqa: E402
from leka.ir import CandidateIR  # noqa: E402
from leka.proposers import ProposalRequest, get_proposer  # noqa: E402
from leka.tasks import all_tasks  # noqa: E402


def _entry(layer: str, ir, res: dict) -> dict:
    return {"layer": layer, "summary": ir.summary(), "compiled": res["compiled"], "correct": res["correct"],
            "failure": res["failure"], "error": res["error"], "speedup": res["speedup"],
            "candidate_ms": res["candidate_ms"]}


def run_task(ev: Evaluator, proposer, task, k: int, rounds: int, k_alg: int) -> dict:
    """The agent's walk in small: algorithm rewrites first (each evaluated), then `rounds` of schedule
    proposals on the task's definition (k per round) and on each correct rewrite (k - 1 per round),
    each base with its own history. The best correct candidate of all counts."""
    best = None
    tried = []
    naive_ms = None

    def evaluate(layer: str, p) -> dict:
        nonlocal best, naive_ms
        src = p.ir.to_tvmscript(ev.target)
        res = ev.evaluate(task, src, baseline="tvm-naive").to_json()
        tried.append(res)
        naive_ms = res.get("baseline_ms") or naive_ms
        if res["correct"] and res["speedup"] and (best is None or res["speedup"] > best["speedup"]):
            alg = p.ir.algorithm.note.split(":")[0] if p.ir.algorithm.kind != "task" else ""
            best = {**res, "rule": (f"[{alg}] " if alg and layer != "algorithm" else ""), "source": src}
            best["rule"] += p.rationale
        return _entry(layer, p.ir, res)

    ir0 = CandidateIR.initial(task)
    bases = [(ir0, k, [])]
    alg_history: list[dict] = []
    if k_alg:
        for p in proposer.propose(ProposalRequest("algorithm", ir0, task, ev.target, [], k_alg)):
            entry = evaluate("algorithm", p)
            alg_history.append(entry)
            if entry["correct"]:
                bases.append((p.ir, max(1, k - 1), []))
    for _ in range(rounds):
        for base, k_base, history in bases:
            props = proposer.propose(ProposalRequest("schedule", base, task, ev.target, history, k_base))
            for p in props:
                history.append(evaluate("schedule", p))
    search_speedup = best["speedup"] if best else None
    if best is not None:
        # The search kept the largest of several noisy ratios (biased upwards): the figure reported is a
        # fresh evaluation of that candidate (correctness trials + timing against the baseline again).
        # When the two disagree by more than 25 % (microsecond kernels with a parallel loop are at the mercy
        # of the second core), two more fresh evaluations are made and the median of the three is reported.
        runs = [ev.evaluate(task, best["source"], baseline="tvm-naive", holdout=True).to_json()]
        ratio = (runs[0]["speedup"] or 0) / search_speedup
        if runs[0]["correct"] and not 0.8 <= ratio <= 1.25:
            runs += [ev.evaluate(task, best["source"], baseline="tvm-naive", holdout=True).to_json() for _ in range(2)]
        if not all(r["correct"] and r["speedup"] for r in runs):
            best = None
        else:
            again = sorted(runs, key=lambda r: r["speedup"])[len(runs) // 2]
            best = {**best, **{k: again[k] for k in ("speedup", "candidate_ms", "baseline_ms")},
                    "remeasured": [round(r["speedup"], 3) for r in runs], "fast": metrics.is_fast(again, 1.0)}
            naive_ms = best["baseline_ms"]
    return {"task": task.id, "naive_ms": naive_ms, "best_ms": best["candidate_ms"] if best else None,
            "speedup": best["speedup"] if best else None, "search_speedup": search_speedup,
            "remeasured": best.get("remeasured") if best else None,
            "correct": best is not None, "fast": bool(best and best.get("fast")),
            "rule": best["rule"] if best else None, "tried": len(tried),
            "failures": [h["failure"] for h in tried if h["failure"]],
            "errors": [h["error"][:200] for h in tried if h.get("error")][:2]}


def sample(tasks: list, n: int) -> list:
    """The example tasks, then the first task (by id) of each pattern, taking domains in turn."""
    chosen = [t for t in tasks if t.id.startswith("ex-")]
    by_domain: dict[str, list] = {}
    seen = {t.pattern for t in chosen}
    for t in sorted(tasks, key=lambda t: t.id):
        if t.pattern not in seen:
            seen.add(t.pattern)
            by_domain.setdefault(t.domain, []).append(t)
    queues = [by_domain[d] for d in sorted(by_domain)]
    while len(chosen) < n and any(queues):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=3, help="proposals per round")
    ap.add_argument("--rounds", type=int, default=2, help="propose/evaluate rounds (history fed back)")
    ap.add_argument("--k-alg", type=int, default=1, help="algorithm rewrites tried first (0 = schedule layer only)")
    ap.add_argument("--sample", type=int, default=60,
                    help="tasks to run: the examples, then one task per pattern, round-robin over domains "
                         "(deterministic); 0 = every L1 task")
    ap.add_argument("--match", default="", help="only task ids containing this text")
    ap.add_argument("--json", type=Path, help="write the rows as JSON lines here")
    args = ap.parse_args()
    tasks = [t for t in all_tasks() if (t.level == 1) and args.match in t.id]
    if args.sample:
        tasks = sample(tasks, args.sample)
    proposer = get_proposer(None)
    rows = []
    t0 = time.time()
    cfg = EvalConfig()  # the evaluator's default protocol (5 correctness trials, alternating timing rounds)
    print(f"{'task':44s} {'naive ms':>10s} {'best ms':>10s} {'speedup':>8s} {'search':>7s} {'ok':>3s}  best rule")
    with Evaluator("host-cpu", cfg) as ev:
        for task in tasks:
            try:
                row = run_task(ev, proposer, task, args.k, args.rounds, args.k_alg)
            except Exception as e:  # a task that does not build (catalogue in progress) is reported, not fatal
                msg = [ln for ln in str(e).strip().splitlines() if ln.strip()]
                row = {"task": task.id, "error": f"{type(e).__name__}: {msg[-1] if msg else ''}"}
            rows.append(row)
            if "error" in row:
                print(f"{task.id:44s} ERROR {row['error'][:120]}")
                continue
            fmt = lambda v: f"{v:10.4f}" if isinstance(v, (int, float)) else f"{'-':>10s}"  # noqa: E731
            sp = f"{row['speedup']:8.2f}" if row["speedup"] else f"{'-':>8s}"
            sp += f" {row['search_speedup']:7.2f}" if row.get("search_speedup") else f" {'-':>7s}"
            print(f"{task.id:44s} {fmt(row['naive_ms'])} {fmt(row['best_ms'])} {sp} {'yes' if row['correct'] else 'no':>3s}"
                  f"  {row['rule'] or ';'.join(row['failures'])}", flush=True)
    errors = [r for r in rows if "error" in r]
    if errors:
        print(f"\n{len(errors)} task(s) could not be run: " + ", ".join(r["task"] for r in errors))
    faster = [r for r in rows if r.get("correct") and (r.get("speedup") or 0) > 1.0]
    clear = [r for r in rows if r.get("fast")]  # beyond timing noise: leka.bench.metrics.is_fast
    correct = [r for r in rows if r.get("correct")]
    sp = sorted(r["speedup"] for r in correct)
    geo = 1.0
    for s in sp:
        geo *= s ** (1 / len(sp)) if sp else 1
    print(f"\n{len(tasks)} L1 tasks on host-cpu in {time.time() - t0:.0f} s: correct candidate for {len(correct)}; "
          f"correct and faster than tvm-naive: {len(faster)}/{len(tasks)} = {100 * len(faster) / max(1, len(tasks)):.1f}% "
          f"(goal >= 90%); beyond noise (metrics.is_fast): {len(clear)}/{len(tasks)} = {100 * len(clear) / max(1, len(tasks)):.1f}%; geomean speedup of the best correct {geo:.2f}x; median {sp[len(sp) // 2] if sp else 0:.2f}x")
    if args.json:
        args.json.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
