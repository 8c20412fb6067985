"""The kernels of `leka optimize` as executor jobs: one job per kernel with a budget
(leka.optimize.tune.run_job, a method attempt under the kernel's share of the budget), decided and written to
the tuning database by the driver as each comes back, so a Ray cluster tunes a model's kernels in parallel and
--resume loses no finished kernel. The decision rules are tune.py's (crashed_winner, record_decision); only
the dispatch differs from its local worker processes."""
from __future__ import annotations

from typing import Any, Callable

from .base import PLACED, Executor, Job, needs_gpu
from .progress import node_label


def tune_on_executor(executor: Executor, profs: list[Any], preset: Any, method: str, options: dict[str, Any],
                     run_id: str, db: Any, on_event: Callable[[str, str, Any], None],
                     rpc: str | None = None) -> dict[str, Any]:
    """Decisions by kernel key for every kernel of `profs` (leka.optimize.profile.KernelProfile) with a budget;
    on_event gets the jobs' own events ("start", "msg"), "placed" with the node each starts on, and "done"
    with the decision (leka.optimize.view.OptimizeView.event)."""
    import os

    from leka.optimize.db import target_key
    from leka.optimize.tune import TuneJob, crashed_winner, record_decision, run_job

    target = preset.target if preset.name == "custom" else preset.name
    home, tkey = os.environ.get("LEKA_HOME"), target_key(preset)
    by_key = {p.spec.key: TuneJob(p.spec, target, method, options, p.budget, run_id, home, rpc)
              for p in profs if p.budget is not None}
    jobs = [Job(k, j, timed=not j.rpc, gpu=not j.rpc and needs_gpu(j.target)) for k, j in by_key.items()]

    def event(key: str, kind: str, payload: Any) -> None:
        on_event(key, kind, node_label(payload) if kind == PLACED else payload)  # PLACED: the node, as a label

    done: dict[str, Any] = {}
    for d in executor.run_jobs(run_job, jobs, event):
        j = d.job.payload
        w = d.value
        if d.error is not None:  # the job died (a lost node, a dead worker): the default build stays
            w = crashed_winner(j.spec.key, j.spec.task_id, j.method, j.run_id, d.error, j.budget)
        if d.where is not None:
            w.detail["where"] = d.where
        record_decision(db, w, tkey)
        done[d.job.key] = w
        on_event(d.job.key, "done", w)
    return done
