"""Tune each kernel with a registered method, in worker processes, with live progress.

Each job builds its own Evaluator and runs `method.run(task, target, ctx)` under the kernel's share of the
budget. The method's final answer is the decision: a correct candidate faster than the default build (as
the evaluator re-measured it) replaces the kernel; otherwise the default build stays. Decisions go to the
tuning database as they finish, so an interrupted optimisation loses no finished kernel (--resume).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from .db import TuningDB, Winner, target_key
from .extract import KernelSpec, make_task
from .profile import KernelProfile

# A winner must beat the default build by more than timing noise (docs: "fast" means beyond the noise).
MIN_SPEEDUP = 1.05


@dataclass
class TuneJob:
    spec: KernelSpec
    target: Any  # preset name or target dict
    method: str
    options: dict[str, Any]
    budget: str
    run_id: str
    leka_home: str | None
    rpc: str | None = None  # TRACKER_HOST:PORT:KEY (leka/runners/rpc.py)


def run_job(job: TuneJob, events: Any = None) -> Winner:
    """One kernel, one method attempt (runs in a worker process)."""
    if job.leka_home:
        os.environ["LEKA_HOME"] = job.leka_home
    # Terminated by the parent (Ctrl-C there): unwind, so the evaluator's worker is closed, not orphaned.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from leka.budget import Budget
    from leka.evaluator import EvalConfig
    from leka.executors.base import evaluator_for
    from leka.methods import MethodContext, get_method
    from leka.targets import get_target

    preset = get_target(job.target)
    task = make_task(job.spec, preset)
    method = get_method(job.method, job.options)
    budget = Budget.parse(job.budget)

    if events is not None:
        events.put((job.spec.key, "start", job.budget))

    def say(msg: str) -> None:
        if events is not None:
            events.put((job.spec.key, "msg", msg[:120]))

    with evaluator_for(preset, EvalConfig(), job.rpc) as ev:
        ctx = MethodContext(evaluator=ev, budget=budget, store=None, run_id=job.run_id, options=dict(job.options),
                            progress=say)
        samples = method.run(task, preset, ctx)
    final = samples[-1] if samples else None
    res = final.result if final is not None else {}
    meta = final.meta if final is not None else {}
    ok = is_winner(res) and bool(final and final.source)
    detail = {"budget": job.budget, "spent": budget.spent(), "failure": res.get("failure"),
              "error": (res.get("error") or "")[:300], "search_speedup": meta.get("search_speedup"),
              "stop_reason": meta.get("stop_reason"), "correct": res.get("correct"),
              "measured_speedup": res.get("speedup"), "noise_floor": noise_floor(res)}
    return Winner(job.spec.key, task.id, final.source if ok else None, res.get("speedup") if ok else None,
                  res.get("candidate_ms"), res.get("baseline_ms"), job.method, job.run_id,
                  meta.get("agent_run"), detail)


def noise_floor(res: dict[str, Any]) -> float:
    """The speedup a winner must exceed: MIN_SPEEDUP, raised by the uncertainty of the two medians (half
    their relative IQRs over sqrt(rounds)), so a loaded machine asks for a clearer gain."""
    rounds = max(int(res.get("rounds") or 1), 1)
    spread = (res.get("spread") or 0.0) + (res.get("baseline_spread") or 0.0)
    return max(MIN_SPEEDUP, 1.0 + 0.5 * spread / rounds ** 0.5)


def settled_default(w: Winner) -> bool:
    """A kept default is worth remembering only when the attempt ran and found no gain; a failed attempt
    (crash, timeout) or a gain lost in the noise is tried again by the next run."""
    return bool(w.detail.get("correct")) and (w.detail.get("measured_speedup") or 0) <= MIN_SPEEDUP


def is_winner(res: dict[str, Any]) -> bool:
    """Correct, faster than the noise floor, and the per-round paired ratios agree (when recorded)."""
    paired = ((res.get("detail") or {}).get("timing") or {}).get("paired_speedup_median")
    return (bool(res.get("correct")) and (res.get("speedup") or 0) > noise_floor(res)
            and (paired is None or paired > MIN_SPEEDUP))


def tune_all(profs: list[KernelProfile], preset: Any, method: str, options: dict[str, Any], run_id: str,
             db: TuningDB, jobs: int, on_event: Callable[[str, str, Any], None],
             rpc: str | None = None, executor: Any = None) -> dict[str, Winner]:
    """Tune every kernel with a budget (not already decided in the db); returns the new decisions by key.
    executor: a leka.executors executor (e.g. a Ray cluster) runs one job per kernel; None: `jobs` processes."""
    todo = [p for p in profs if p.budget is not None]
    if not todo:
        return {}
    target = preset.target if preset.name == "custom" else preset.name
    home = os.environ.get("LEKA_HOME")
    if executor is not None:
        from leka.executors.tuning import run_tune_jobs

        return run_tune_jobs(executor, [TuneJob(p.spec, target, method, options, p.budget or "", run_id, home, rpc)
                                        for p in todo], on_event, db, target_key(preset))
    ctx = mp.get_context("spawn")  # TVM's thread pools do not survive fork
    manager = ctx.Manager()
    events = manager.Queue()
    # One fresh process per kernel (maxtasksperchild=1); a Pool, unlike ProcessPoolExecutor, can be terminated.
    pool = ctx.Pool(processes=max(1, jobs), maxtasksperchild=1)
    try:
        running = {p.spec.key: (pool.apply_async(run_job, (TuneJob(p.spec, target, method, options, p.budget or "",
                                                                   run_id, home, rpc), events)), p) for p in todo}
        return _collect(running, events, on_event, db, target_key(preset), method, run_id)
    except BaseException:  # Ctrl-C or a failure here: stop the jobs (each closes its evaluator on SIGTERM)
        pool.terminate()
        raise
    finally:
        pool.close()
        pool.join()
        manager.shutdown()


def _collect(running: dict[str, tuple[Any, KernelProfile]], events: Any, on_event: Callable[[str, str, Any], None],
             db: TuningDB, tkey: str, method: str, run_id: str) -> dict[str, Winner]:
    """Decisions as the jobs finish, each stored in the db at once (what --resume relies on)."""
    done: dict[str, Winner] = {}
    while running:
        time.sleep(0.3)
        _drain(events, on_event)
        for key in [k for k, (res, _p) in running.items() if res.ready()]:
            res, p = running.pop(key)
            try:
                w = res.get()
            except Exception as e:  # a method that crashed: the default build stays, the reason is kept
                w = crashed_winner(p.spec, p.budget, method, run_id, f"{type(e).__name__}: {str(e)[:300]}")
            keep_decision(db, w, tkey)
            done[key] = w
            on_event(key, "done", w)
    _drain(events, on_event)
    return done


def crashed_winner(spec: KernelSpec, budget: str | None, method: str, run_id: str, error: str) -> Winner:
    """The decision for a kernel whose tuning job died: the default build stays, the reason is kept."""
    return Winner(spec.key, spec.task_id, None, None, None, None, method, run_id, None,
                  {"error": error, "budget": budget})


def keep_decision(db: TuningDB, w: Winner, tkey: str) -> None:
    """Into the db at once (what --resume relies on): a winner, or a default the attempt settled."""
    if w.source or settled_default(w):
        db.put(w, tkey)


def _drain(events: Any, on_event: Callable[[str, str, Any], None]) -> None:
    while True:
        try:
            key, kind, payload = events.get_nowait()
        except (queue_mod.Empty, EOFError, OSError):
            return
        on_event(key, kind, payload)
