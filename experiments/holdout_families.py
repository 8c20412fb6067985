"""Every suite task's baseline lowerings on the held-back input families: which (task, lowering, family)
fails? A family belongs in HOLDOUT_DISTS only where every correct kernel passes it, and the naive and dlight
lowerings of the definitions are the correct kernels we always have.

Default (fast, for screening): the lowering is built once in this process (it is our own definition, not a
candidate) and run on one trial per family, made by the evaluator's own make_trials and judged by its
check_outputs. Graph (L3) tasks, and every task with --sandboxed, go through the real evaluator (sandboxed
worker, no timing): one ordinary trial, then one per family; a held-back mismatch names only its trial index,
so the family is read off that index, dropped, and the evaluation repeated on the rest until it passes.
Long (~1-5 s an evaluation on a loaded 2-core machine): run it in chunks.

    python experiments/holdout_families.py --chunk 1/4 --json /tmp/hf1.json
    python experiments/holdout_families.py --tasks l1-consecutive_cosine_change-309x640 --families runs,steps
"""
from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from leka.bench.validate import CONSTANTS_MARK  # noqa: E402
from leka.tasks.task import HOLDOUT_DISTS, STRUCTURED_DISTS  # noqa: E402

TRIAL_RE = re.compile(r"trial (\d+) \(held-back inputs\)")


def lowering(task: Any, target: Any, rules: str) -> tuple[Any, str] | None:
    """(module, TVMScript) of the definition scheduled by `rules`, or None where dlight has no rule for it."""
    from leka.compiler import default_schedule

    mod = default_schedule(task.build(), target, rules=rules)
    if mod is None:
        return None
    src = mod.script()
    return None if CONSTANTS_MARK in src else (mod, src)


def failing_in_process(task: Any, mod: Any, target: Any, families: tuple[str, ...], seed: int) -> list[str]:
    """Families whose trial the built lowering fails (inputs changed or outputs off), run in this process."""
    from leka.compiler import build
    from leka.evaluator import EvalConfig
    from leka.evaluator.correctness import check_outputs, inputs_unchanged
    from leka.evaluator.inputs import make_trials
    from leka.runners import get_runner

    exe = get_runner(target).load(build(mod, target))
    cfg = EvalConfig(trials=1, dists=("normal",), holdout=True, holdout_dists=families, measure=False)
    trials = make_trials(task, cfg, seed, holdout=True, measure=False).trials[1:]
    names = [a.name for a in task.inputs]
    failed = []
    for fam, trial in zip(families, trials, strict=True):
        fills = [np.full(a.shape, np.nan, a.dtype) if np.dtype(a.dtype).kind == "f" else np.zeros(a.shape, a.dtype)
                 for a in task.outputs]
        exe.upload([a.copy() for a in trial.inputs] + fills)
        exe.run()
        got = exe.download()
        n = len(trial.inputs)
        if inputs_unchanged(trial.inputs, got[:n], names) or not check_outputs(task, got[n:], trial.refs, trial.ties).ok:
            failed.append(fam)
    return failed


def forked(task: Any, target: Any, rules: str, families: tuple[str, ...],
           timeout_s: float) -> tuple[Any, list[str], str | None]:
    """lowering + failing_in_process in a forked child with a deadline (a TVM build can hang: the dlight
    lowering of l1-diag_gaussian_loglik-1024x32 did not finish in 120 s). (lowering or None, failed, other)."""
    import multiprocessing as mp

    def child(conn: Any) -> None:
        try:
            low = lowering(task, target, rules)
            failed = failing_in_process(task, low[0], target, families, secrets.randbits(63)) if low else []
            conn.send((low is not None, failed, None))
        except Exception as e:  # noqa: BLE001 - reported as the task's failure
            conn.send((True, [], f"definition_error: {type(e).__name__}: {str(e)[:200]}"))

    ctx = mp.get_context("fork")
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child, args=(there,), daemon=True)
    proc.start()
    ready = here.poll(timeout_s)
    got = here.recv() if ready else None
    proc.join(5) if ready else proc.kill()
    if got is None:
        return "", [], f"timeout: no result within {timeout_s:.0f} s"
    return ("" if got[0] else None), got[1], got[2]


def failing_families(ev_for: Any, task: Any, src: str, families: tuple[str, ...]) -> tuple[list[str], str | None]:
    """(families whose trial fails, a failure that is not a held-back mismatch or None)."""
    failed: list[str] = []
    rest = list(families)
    while rest:
        res = ev_for(tuple(rest)).evaluate(task, src, measure=False)
        if res.correct or res.status == "build_only":
            return failed, None
        m = TRIAL_RE.search(res.error or "")
        if not m or int(m.group(1)) < 1:
            return failed, f"{res.failure}: {(res.error or '').splitlines()[0] if res.error else ''}"
        failed.append(rest.pop(int(m.group(1)) - 1))  # trial 0 is the ordinary one
    return failed, None


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(dict.fromkeys(HOLDOUT_DISTS + STRUCTURED_DISTS)))
    ap.add_argument("--rules", default="naive,dlight")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: the whole suite)")
    ap.add_argument("--chunk", default="1/1", help="K/N: the K-th of N equal slices of the task list")
    ap.add_argument("--target", default="host-cpu")
    ap.add_argument("--json", default="", help="write every result here")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per (task, lowering), forked mode")
    ap.add_argument("--sandboxed", action="store_true", help="every task through the evaluator's worker")
    return ap.parse_args()


def _tasks(args: argparse.Namespace) -> list[Any]:
    """The suite's tasks of the wanted levels and ids, then the --chunk slice of them."""
    from leka.tasks import all_tasks

    levels = {int(x) for x in args.levels.split(",")}
    wanted = {t for t in args.tasks.split(",") if t}
    tasks = [t for t in all_tasks() if t.level in levels and (not wanted or t.id in wanted)]
    k, n = (int(x) for x in args.chunk.split("/"))
    return tasks[(k - 1) * len(tasks) // n: k * len(tasks) // n]


def _check(task: Any, target: Any, rules: str, families: tuple[str, ...], args: argparse.Namespace,
           ev_for: Any) -> dict[str, Any]:
    """One (task, lowering) on the families its definition takes: the result row."""
    t1 = time.perf_counter()
    failed, other = [], None
    fams = tuple(f for f in families if f not in task.holdout_skip)  # declared: judging skips them
    try:
        if args.sandboxed or task.level == 3:
            low = lowering(task, target, rules)
            failed, other = failing_families(ev_for, task, low[1], fams) if low else ([], None)
        else:
            low, failed, other = forked(task, target, rules, fams, args.timeout)
    except Exception as e:  # noqa: BLE001 - a definition that does not build is reported, not fatal
        low, other = (None, ""), f"definition_error: {type(e).__name__}: {str(e)[:200]}"
    return {"task": task.id, "rules": rules, "skipped": low is None, "failed_families": failed,
            "declared_skip": sorted(set(families) - set(fams)),
            "other_failure": other, "eval_s": round(time.perf_counter() - t1, 2)}


def _summary(results: list[dict[str, Any]], families: tuple[str, ...], n_tasks: int, wall_s: float) -> None:
    bad = [r for r in results if r["failed_families"] or r["other_failure"]]
    print(f"\n{n_tasks} tasks, {len(results)} evaluations ({sum(r['skipped'] for r in results)} n/a) "
          f"on {families} in {wall_s:.0f} s: {len(bad)} with failures")
    for fam in families:
        hit = [f"{r['task']} ({r['rules']})" for r in results if fam in r["failed_families"]]
        print(f"  {fam:12s} {len(hit)} failing" + (": " + ", ".join(hit) if hit else ""))
    for r in results:
        if r["declared_skip"] and r["rules"] == "naive":
            print(f"  declared: {r['task']} skips {r['declared_skip']}")
    for r in bad:
        if r["other_failure"]:
            print(f"  other: {r['task']} ({r['rules']}): {r['other_failure']}")


def main() -> int:
    args = _parse_args()
    from leka.evaluator import EvalConfig, Evaluator
    from leka.targets import get_target

    families = tuple(f for f in args.families.split(",") if f)
    tasks = _tasks(args)
    target = get_target(args.target)
    evaluators: dict[tuple[str, ...], Any] = {}

    def ev_for(fams: tuple[str, ...]) -> Any:  # one sandboxed worker per family set (usually just one)
        if fams not in evaluators:
            cfg = EvalConfig(trials=1, dists=("normal",), holdout=True, holdout_dists=fams, measure=False)
            evaluators[fams] = Evaluator(target, cfg).__enter__()
        return evaluators[fams]

    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    try:
        for i, task in enumerate(tasks, 1):
            for rules in args.rules.split(","):
                r = _check(task, target, rules, families, args, ev_for)
                results.append(r)
                failed, other = r["failed_families"], r["other_failure"]
                mark = "n/a" if r["skipped"] else ("ok" if not failed and not other else f"FAIL {failed} {other or ''}")
                print(f"[{i}/{len(tasks)}] {task.id:48s} {rules:7s} {mark} {r['eval_s']:.1f} s", flush=True)
    finally:
        for ev in evaluators.values():
            ev.__exit__(None, None, None)
    _summary(results, families, len(tasks), time.perf_counter() - t0)
    if args.json:
        Path(args.json).write_text(json.dumps({"families": families, "results": results}, indent=1))
    return 1 if any(r["failed_families"] or r["other_failure"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
