"""One search interface for the flat methods, in the shape of MetaSchedule's SearchStrategy: a strategy
proposes candidates (`generate`), ONE measurement path builds, checks and times them, and the strategy is
told the results (`notify`) before it proposes again. `run_search` is the only loop.

direct (one program, no feedback), codeloop with a model (a tool loop whose build tools are the
measurements) and codeloop without one (greedy over the offline rules' flat schedules) are strategies
here (baselines/direct.py, baselines/codeloop.py); swapping the strategy is the whole difference between
them. The measurement path is the attempt's Workspace (baselines/workspace.py): every build is charged to
the attempt's budget and journaled there, whoever proposed it. LEKA's layered agent keeps its own graph
(leka/agent); its ablations are options of that one graph (layers=, feedback=, pick=), not other loops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

BUILD_KINDS = ("compile", "run_tests", "profile")  # how far a measurement goes: build, + check, + time


@dataclass(frozen=True)
class Candidate:
    """One program to measure: `source` is written to `path` first (None: measure the file as it stands,
    as a tool call on a file the model wrote does)."""

    kind: str  # one of BUILD_KINDS
    source: str | None = None
    path: str = "kernel.py"
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Measured:
    """What the measurement path answered: the text a model is told, and the evaluator's record (None when
    nothing was evaluated, e.g. the file does not exist)."""

    reply: str
    result: dict[str, Any] | None


class SearchStrategy(Protocol):
    stop_reason: str  # why generate() last returned None

    def generate(self) -> list[Candidate] | None:
        """The next candidates to measure; None when the search is over (stop_reason says why)."""

    def notify(self, candidates: list[Candidate], results: list[Measured]) -> None:
        """The measurements of the candidates generate() returned, in their order."""


Measure = Callable[[Candidate], Measured]
ROUND_CAP = 10_000  # a strategy that never stops is a bug; its own caps (turns, samples) come first


def run_search(strategy: SearchStrategy, measure: Measure) -> str:
    """propose -> measure -> notify until the strategy stops; returns its stop reason. The budget's
    BudgetExceeded propagates from the measurement (or from a model call inside generate)."""
    for _ in range(ROUND_CAP):
        candidates = strategy.generate()
        if candidates is None:
            return strategy.stop_reason
        strategy.notify(candidates, [measure(c) for c in candidates])
    return f"round cap ({ROUND_CAP}) reached"
