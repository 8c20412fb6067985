"""LEKA runs whose measurements come from a remote host: they pause on pending measurements (the graph's
checkpoint keeps them) and resume after each ingested round. See leka.remote.pending and .rounds.

    runs = start(store, [TuneOptions(task_id=..., target="cuda"), ...])   # every run pauses at its first step
    rounds.batch(store, "jobs")     ->  remote: python -m leka.remote.multi jobs/round-1/*
    rounds.ingest(store, "jobs");  resume_all(store)                      # each run goes one step further
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .pending import MeasurementPending, PendingStore, remote_evaluate_fn

# Defaults of a run measured remotely: each search step is one round on the remote host (finalize's fresh
# re-measure one more), and a round costs one job per task whatever the number of candidates in it.
REMOTE_STEPS = 2
REMOTE_K = 4


def remote_policy(target: Any, max_steps: int = REMOTE_STEPS, **kw: Any) -> Any:
    """A remote run's policy: REMOTE_K proposals a step (one round each); on a GPU, stop after a round in
    which nothing beat a launch-bound dlight kernel (Policy.no_headroom_ms)."""
    from leka.agent.floor import LAUNCH_FLOOR_MS
    from leka.agent.state import Policy
    from leka.targets import get_target

    gpu = get_target(target).family != "cpu"
    return Policy(k=REMOTE_K, max_steps=max_steps, no_headroom_ms=LAUNCH_FLOOR_MS if gpu else None, **kw)


def _drive(store: PendingStore, run_id: str, opts: Any, *, resume: bool, trace: Any = None,
           checkpoint: str | Path | None = None) -> dict[str, Any] | None:
    """Run (or resume) one run until it ends (final record) or pauses on measurements (None)."""
    from leka.agent.run import drive
    from leka.agent.session import build_context, make_proposer
    from leka.agent.trace import TraceStore
    from leka.budget import Budget
    from leka.targets import get_target

    task, target = store.task(opts.task_id, opts.tasks_paths), get_target(opts.target)
    trace = trace or TraceStore()
    budget = Budget.parse(opts.budget)
    proposer = make_proposer(opts.llm, opts.base_url, budget)
    baseline = opts.baseline_for(target)
    evaluate = remote_evaluate_fn(store, run_id, task, target.name, baseline)
    remeasure = remote_evaluate_fn(store, run_id, task, target.name, baseline, salt="final")
    ctx = build_context(run_id, task, target, proposer, evaluate, remeasure, budget, trace, opts.limits(), baseline)
    store.set_run(run_id, {"tune": opts.to_json()}, "running")
    try:
        final = drive(ctx, trace, policy=opts.policy, resume=resume, checkpoint=checkpoint,
                      options={"tune": opts.to_json(), "remote": True})
    except MeasurementPending:
        trace.set_status(run_id, "pending")
        store.set_run(run_id, {"tune": opts.to_json()}, "pending")
        return None
    store.set_run(run_id, {"tune": opts.to_json()}, "done")
    return final


def start(store: PendingStore, options: list[Any], **kw: Any) -> list[str]:
    """Start one run per TuneOptions; each goes until its first pending measurement. Returns run ids."""
    from leka.agent.run import new_run_id

    ids = []
    for opts in options:
        run_id = new_run_id()
        _drive(store, run_id, opts, resume=False, **kw)
        ids.append(run_id)
    return ids


def resume_all(store: PendingStore, given: dict[str, Any] | None = None,
               **kw: Any) -> dict[str, dict[str, Any] | None]:
    """Resume every paused run from its checkpoint: {run_id: final record, or None if it paused again}.
    given: the command line's tasks_paths, llm and base_url; every paused run's stored ones must equal them
    (leka.resume_guard), checked before any run resumes."""
    from leka.agent.session import resumed_options

    paused = [r for r in store.runs() if r["status"] in ("pending", "running")]  # "running": a driver killed
    opts = {r["run_id"]: resumed_options(r["run_id"], r["options"].get("tune") or {}, given or {}) for r in paused}
    return {rid: _drive(store, rid, o, resume=True, **kw) for rid, o in opts.items()}
