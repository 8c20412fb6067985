"""The kernels of `leka optimize` as executor jobs, the one way they fan out: one job per kernel with a budget
(leka.optimize.tune.run_job, a method attempt under the kernel's share of the budget) and, after them, one quick-pass
job for the kernels given no search (tune.run_quick; round 0 of a minutes budget is that job alone), all through leka.optimize.tune.run_tuning_job. The executor is the
local pool (leka/executors/pool.py, `--jobs` fresh worker processes) unless `--executor` names another (Ray). The
driver decides each kernel and writes it to the tuning database as its job comes back, so --resume loses no
finished kernel. The decision rules are tune.py's (crashed_winner, record_decision)."""
from __future__ import annotations

import os
from contextlib import closing
from typing import Any, Callable

from .base import PLACED, Executor, Job, needs_gpu
from .progress import node_label


def tune_on_executor(executor: Executor, profs: list[Any], preset: Any, method: str, options: dict[str, Any],
                     run_id: str, db: Any, on_event: Callable[[str, str, Any], None], rpc: str | None = None,
                     until: float | None = None, attempt: int = 0) -> dict[str, Any]:
    """Decisions by kernel key for every kernel of `profs` (leka.optimize.profile.KernelProfile) with a budget,
    and for the quick ones not yet in the db (the quick pass, one job after the others; `until`: when the whole
    minutes budget ends, epoch seconds, its deadline if later than its own share). `attempt`: the round (a new
    search, its own agent run and seed). on_event gets the jobs' own events ("start", "msg"), "placed" with the
    node each starts on, and "done" with each decision (leka.optimize.view.OptimizeView.event)."""
    from leka.optimize.db import target_key
    from leka.optimize.tune import QUICK_KEY, QuickJob, TuneJob, crashed_winner, record_decision, run_tuning_job

    target = preset.target if preset.name == "custom" else preset.name
    home, tkey = os.environ.get("LEKA_HOME"), target_key(preset)
    work: dict[str, tuple[Any, list[Any]]] = {  # job key -> (payload, the kernels it decides)
        p.spec.key: (TuneJob(p.spec, target, method, options, p.budget, run_id, home, rpc, attempt, until), [p])
        for p in profs if p.budget is not None}
    quick = [p for p in profs if p.quick and p.budget is None and preset.runnable and db.get(p.spec.key, tkey) is None]
    if quick:  # after the searched kernels: they matter more if the time runs out
        limit = None if any(p.quick_minutes is None for p in quick) else sum(p.quick_minutes or 0 for p in quick)
        work[QUICK_KEY] = (QuickJob([p.spec for p in quick], target, run_id, home, limit, rpc, until), quick)
    if not work:
        return {}
    gpu = not rpc and needs_gpu(target)
    jobs = [Job(k, payload, timed=not rpc, gpu=gpu) for k, (payload, _ps) in work.items()]

    def event(key: str, kind: str, payload: Any) -> None:
        if kind != PLACED:
            on_event(key, kind, payload)
            return
        kernels = [p.spec.key for p in work[key][1]] if key in work else [key]  # the quick pass decides several
        for k in kernels:
            on_event(k, kind, node_label(payload))  # the node, as a label

    done: dict[str, Any] = {}
    with closing(executor.run_jobs(run_tuning_job, jobs, event)) as outcomes:  # closed early: its jobs stop
        for d in outcomes:
            winners = d.value if isinstance(d.value, list) else [d.value]
            if d.error is not None:  # the job died (it raised, its process or node was lost): defaults stay
                winners = [crashed_winner(p.spec.key, p.spec.task_id, method, run_id, d.error, p.budget)
                           for p in work[d.job.key][1]]
            for w in winners:
                if d.where is not None:
                    w.detail["where"] = d.where
                record_decision(db, w, tkey)
                done[w.kernel_key] = w
                on_event(w.kernel_key, "done", w)
    return done
