"""What the graph's nodes need from the outside world, passed as callables so each piece can be swapped.

The real wiring (leka.proposers, leka.evaluator, leka.budget, leka.ir) is done in session.py; tests
hand in a scripted proposer and a fake evaluator instead. Nothing here is checkpointed: on resume the
context is rebuilt from the run's stored options.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


class IRLike(Protocol):
    """The slice of leka.ir.CandidateIR the agent uses."""

    def to_json(self) -> dict[str, Any]: ...
    def validate(self, target: Any) -> list[str]: ...
    def to_tvmscript(self, target: Any) -> str: ...
    def diff(self, other: Any) -> str: ...
    def summary(self, layer: str | None = None) -> str: ...
    def hash(self) -> str: ...


class BudgetLike(Protocol):
    def charge(self, kind: str, amount: float = 1) -> None: ...
    def settle(self, kind: str, amount: float) -> None: ...
    def can_afford(self, kind: str, amount: float = 1) -> bool: ...
    def check_time(self) -> None: ...
    def spent(self) -> dict[str, Any]: ...


class Journal(Protocol):
    """Write-ahead store of proposals and measurements, keyed per run: re-running a node after a kill
    reads them back instead of paying (or measuring) twice."""

    def journal_get(self, run_id: str, key: str) -> Any | None: ...
    def journal_put(self, run_id: str, key: str, value: Any) -> None: ...


# propose(layer, base_ir, history, k) -> proposals (objects with .layer, .ir, .rationale, .meta)
ProposeFn = Callable[[str, Any, list[dict[str, Any]], int], list[Any]]
# evaluate(tvmscript_text) -> EvalResult JSON (leka.evaluator contract)
EvaluateFn = Callable[[str], dict[str, Any]]


@dataclass
class AgentContext:
    run_id: str
    task: Any  # leka.tasks.Task
    target: Any  # leka.targets.TargetPreset (passed through to IR and proposer)
    propose: ProposeFn
    evaluate: EvaluateFn
    ir_from_json: Callable[[dict[str, Any]], IRLike]
    journal: Journal
    budget: BudgetLike | None = None
    # Finalize re-measures in a FRESH worker; defaults to `evaluate` when none is given.
    remeasure: EvaluateFn | None = None
    proposer_name: str = "unknown"
    # JSON of the IR a fresh run starts from; None = CandidateIR.initial(task).
    initial_ir: dict[str, Any] | None = None
    # Exceptions that mean "the budget says stop" (leka.budget.BudgetExceeded in real runs).
    budget_errors: tuple[type[BaseException], ...] = field(default_factory=lambda: default_budget_errors())
    # Wall-clock deadlines inside steps (leka.agent.deadline.RunClock); None: no deadlines, all work in
    # this process (the tests' fakes).
    clock: Any = None
    # Makes an evaluation blocked past its deadline return (kills the evaluator's worker); None: abandon it.
    cancel: Callable[[], None] | None = None
    # The floor's TVMScript (leka.agent.floor: dlight's schedule on a GPU target, whose initial IR is no
    # kernel): the starting candidate and finalize's last fallback. None: the initial IR is the floor.
    floor: Callable[[], str] | None = None


def default_budget_errors() -> tuple[type[BaseException], ...]:
    try:
        from leka.budget import BudgetExceeded
    except ImportError:  # leka.budget absent: nothing can signal a budget stop but can_afford()
        return ()
    return (BudgetExceeded,)
