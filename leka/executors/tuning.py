"""The kernels of `leka optimize` as executor jobs: one job per kernel (leka.optimize.tune.run_job, a method
attempt under the kernel's share of the budget), decided and written to the tuning database by the driver as
each comes back, so a Ray cluster tunes a model's kernels in parallel and --resume loses no finished kernel."""
from __future__ import annotations

from typing import Any, Callable

from .base import PLACED, Executor, Job, needs_gpu
from .progress import node_label


def run_tune_jobs(executor: Executor, tune_jobs: list[Any], on_event: Callable[[str, str, Any], None], db: Any,
                  tkey: str) -> dict[str, Any]:
    """Decisions by kernel key for `tune_jobs` (leka.optimize.tune.TuneJob); on_event gets the jobs' own
    events ("start", "msg"), "placed" with the node each starts on, and "done" with the decision."""
    from leka.optimize.tune import crashed_winner, keep_decision, run_job

    by_key = {j.spec.key: j for j in tune_jobs}
    jobs = [Job(k, j, timed=not j.rpc, gpu=not j.rpc and needs_gpu(j.target)) for k, j in by_key.items()]

    def event(key: str, kind: str, payload: Any) -> None:
        on_event(key, kind, node_label(payload) if kind == PLACED else payload)  # PLACED: the node, as a label

    done: dict[str, Any] = {}
    for d in executor.run_jobs(run_job, jobs, event):
        j = d.job.payload
        w = d.value if d.error is None else crashed_winner(j.spec, j.budget, j.method, j.run_id, d.error)
        if d.where is not None:
            w.detail["where"] = d.where
        keep_decision(db, w, tkey)
        done[d.job.key] = w
        on_event(d.job.key, "done", w)
    return done
