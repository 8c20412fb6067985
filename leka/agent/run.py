"""Drive one run of the graph: checkpointing, trace writing and progress, for fresh and resumed runs."""
from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from langgraph.checkpoint.sqlite import SqliteSaver

from leka.errors import LekaError
from leka.storage import open_db

from .context import AgentContext
from .floor import FLOOR_SUMMARY
from .graph import final_state, stream_run
from .progress import NoProgress, Progress
from .state import AgentState, Policy, initial_state
from .trace import TraceStore, checkpoint_path


def new_run_id() -> str:
    return "leka-" + uuid.uuid4().hex[:10]


@contextmanager
def open_checkpointer(path: str | Path | None = None) -> Iterator[SqliteSaver]:
    p = Path(path) if path is not None else checkpoint_path()
    # LangGraph owns the tables (saver.setup()); version 1 is the layout of the pinned langgraph-checkpoint-sqlite.
    conn = open_db(p, "", what="LEKA checkpoint store", threads=True, autocommit=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


def restore_spent(ctx: AgentContext, state: AgentState) -> None:
    """On resume, put back what the run had spent at its last checkpoint (wall time restarts)."""
    if ctx.budget is None or not state.get("steps"):
        return
    spent = state["steps"][-1].get("budget_spent") or {}
    settle = getattr(ctx.budget, "settle", None)
    for kind in ("calls", "tokens", "usd", "compiles", "measurements"):
        amount = spent.get(kind) or 0
        if amount and settle is not None:
            settle(kind, amount)


def drive(ctx: AgentContext, store: TraceStore, *, policy: Policy | None = None, resume: bool = False,
          checkpoint: str | Path | None = None, progress: Progress | None = None,
          options: dict[str, Any] | None = None, restore_budget: bool = True) -> dict[str, Any]:
    """Run the graph for ctx.run_id to its end (or resume it) and return the final record.

    Every step is written to the trace as soon as its node completes; after the run the trace is
    re-synced from the checkpointed state (the source of truth), so a kill between the checkpoint and
    the trace write loses nothing. restore_budget: on resume, put the run's spending back into
    ctx.budget (off when the budget is shared with other work that accounts for itself).
    """
    progress = progress or NoProgress()
    if hasattr(progress, "journal"):  # a view that shows the work inside a step as it is journaled
        ctx = replace(ctx, journal=_WatchedJournal(ctx.journal, progress.journal))
    with open_checkpointer(checkpoint) as saver:
        if resume:
            run = store.get_run(ctx.run_id)
            state = final_state(ctx, saver)
            if not state:
                raise LekaError(f"run {ctx.run_id} has no checkpoint to resume from")
            max_steps = int(state["policy"]["max_steps"])
            if restore_budget:
                restore_spent(ctx, state)
            initial: AgentState | None = None
            if run["status"] == "done" and (done := state.get("final")):
                return done
        else:
            if policy is None:
                raise ValueError("a fresh run needs a Policy")
            ir0 = ctx.ir_from_json(_initial_ir_json(ctx))
            summary, speedup = _safe_summary(ir0), 1.0
            try:
                ir0.to_tvmscript(ctx.target)
            except Exception as e:  # e.g. unbound blocks on a GPU target: the floor (dlight) is the start
                summary, speedup = ((FLOOR_SUMMARY, 1.0) if ctx.floor is not None else
                                    (f"initial IR, not runnable as is: {e}", 0.0))
            initial = initial_state(ctx.run_id, ctx.task.id, getattr(ctx.target, "name", str(ctx.target)),
                                    ctx.proposer_name, policy, ir0.to_json(), summary, speedup)
            store.create_run(ctx.run_id, ctx.task.id, initial["target"], ctx.proposer_name,
                             {**(options or {}), "policy": policy.to_json()})
            max_steps = policy.max_steps
        with _marked_on_failure(store, ctx.run_id), progress:
            for node, update in stream_run(ctx, initial, saver, max_steps):
                if update.get("steps"):
                    store.put_steps(ctx.run_id, update["steps"])
                progress.update(node, update)
        state = final_state(ctx, saver)
    store.put_steps(ctx.run_id, state.get("steps", []))
    final = state.get("final")
    if final is None:
        store.set_status(ctx.run_id, "incomplete")
        raise LekaError(f"run {ctx.run_id} ended without a final record; `leka tune --resume {ctx.run_id}`")
    store.set_status(ctx.run_id, "done", final)
    return final


class _WatchedJournal:
    """The run's journal, telling a progress view each write (proposals made, evaluations done): the graph
    streams an update only when a whole step ends."""

    def __init__(self, journal: Any, notify: Any):
        self._journal, self._notify = journal, notify

    def journal_get(self, run_id: str, key: str) -> Any:
        return self._journal.journal_get(run_id, key)

    def journal_put(self, run_id: str, key: str, value: Any) -> None:
        self._journal.journal_put(run_id, key, value)
        try:
            self._notify(key, value)
        except Exception:  # noqa: BLE001 - a display must never break the run
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._journal, name)


@contextmanager
def _marked_on_failure(store: TraceStore, run_id: str) -> Iterator[None]:
    """A run that raises is never left "running": it becomes "failed" with the reason (or "interrupted"
    on Ctrl-C / kill), and `leka tune --resume` can continue it from its last checkpoint."""
    try:
        yield
    except BaseException as e:
        status = "interrupted" if isinstance(e, (KeyboardInterrupt, SystemExit)) else "failed"
        lines = str(e).strip().splitlines()
        reason = f"{type(e).__name__}: {lines[0] if lines else ''}"[:500]
        try:
            store.set_status(run_id, status, {"status": status, "error": reason})
        except Exception:  # noqa: BLE001 - the original error matters more than the bookkeeping
            pass
        raise


def _initial_ir_json(ctx: AgentContext) -> dict[str, Any]:
    if ctx.initial_ir is not None:
        return ctx.initial_ir
    from leka.ir import CandidateIR

    return CandidateIR.initial(ctx.task).to_json()


def _safe_summary(ir: Any) -> str:
    try:
        return str(ir.summary())
    except Exception:
        return "initial IR"
