"""Helpers the layer step and finalize share: the journal, one-line errors, bounded IR work and bounded
evaluations (leka.agent.deadline does the bounding)."""
from __future__ import annotations

import time
from typing import Any, Callable

from leka.errors import one_line

from .context import AgentContext
from .deadline import Bounded, Emit, call_bounded, run_forked, run_inline


def journaled(ctx: AgentContext, key: str, produce: Callable[[], Any]) -> Any:
    hit = ctx.journal.journal_get(ctx.run_id, key)
    if hit is not None:
        return hit
    value = produce()
    if isinstance(value, dict) and value.get("failure") == "pending":
        return value  # owed by a remote host (leka.remote.pending): asked again when the run resumes
    ctx.journal.journal_put(ctx.run_id, key, value)
    return value


def forks(ctx: AgentContext, deadline: float | None) -> bool:
    """Whether bounded_work runs in a forked child (the run has a clock and the step a deadline)."""
    return ctx.clock is not None and deadline is not None


def bounded_work(ctx: AgentContext, work: Callable[[Emit], None], deadline: float | None) -> Bounded:
    """IR work in a forked child killed at `deadline` when the run has a clock; else in this process."""
    if deadline is None or not forks(ctx, deadline):
        return run_inline(work)
    return run_forked(work, deadline)


def evaluate(ctx: AgentContext, key: str, source: str, fn: Callable[[str], dict[str, Any]],
             deadline: float | None = None) -> dict[str, Any]:
    """fn(source) through the journal; an evaluator fault or an overrun of `deadline` becomes a recorded
    failure ("evaluator_error", "cut_off"), never an exception (budget stops excepted)."""
    def produce() -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            if deadline is None:
                return dict(fn(source))
            done, res = call_bounded(fn, source, deadline, ctx.cancel)
            if done:
                return dict(res)
            return {"compiled": False, "correct": False, "failure": "cut_off",
                    "error": f"measurement cut off after {time.monotonic() - t0:.0f} s"}
        except ctx.budget_errors:
            raise
        except Exception as e:  # the evaluator itself broke (not the candidate): record it, run goes on
            return {"compiled": False, "correct": False, "failure": "evaluator_error",
                    "error": one_line(f"{type(e).__name__}: {e}")}
    return journaled(ctx, key, produce)
