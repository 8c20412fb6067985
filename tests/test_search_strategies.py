"""The one search loop (leka.methods.search): strategies propose, the workspace measures, strategies are told.
direct's and codeloop's strategies swap over the same measurement path and budget."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from baselines.codeloop import ToolLoop
from baselines.direct import OneProgram
from baselines.workspace import PROGRAM, Workspace
from leka.budget import Budget, BudgetExceeded
from leka.methods.search import Candidate, Measured, run_search

TASK = SimpleNamespace(id="t", summary=lambda: {"id": "t"})
TARGET = SimpleNamespace(name="host-cpu", family="cpu", facts={})


def _evaluate(source: str, measure: bool) -> dict[str, Any]:
    """A stand-in evaluator: a program holding "fast" is correct at 2x, anything else does not compile."""
    ok = "fast" in source
    return {"compiled": ok, "correct": ok, "failure": None if ok else "compile_error", "error": None,
            "speedup": 2.0 if ok and measure else None, "candidate_ms": 1.0 if ok and measure else None}


def _workspace(budget: str = "compiles=5,measurements=5") -> Workspace:
    return Workspace(TASK, TARGET, _evaluate, Budget.parse(budget), files={PROGRAM: "naive"})


class _Twice:
    """Proposes two rounds of one candidate each, then stops; records what it was told."""

    stop_reason = "two rounds"

    def __init__(self) -> None:
        self.events: list[str] = []
        self.rounds = 0

    def generate(self) -> list[Candidate] | None:
        self.events.append("generate")
        self.rounds += 1
        return [Candidate("profile", f"fast {self.rounds}")] if self.rounds <= 2 else None

    def notify(self, candidates: list[Candidate], results: list[Measured]) -> None:
        self.events.append(f"notify {results[0].result['speedup']}")


def test_propose_measure_notify_until_the_strategy_stops():
    ws, strategy = _workspace(), _Twice()
    measured: list[str] = []

    def measure(cand: Candidate) -> Measured:
        measured.append(cand.source or "")
        return ws.measure(cand)

    assert run_search(strategy, measure) == "two rounds"
    assert strategy.events == ["generate", "notify 2.0", "generate", "notify 2.0", "generate"]
    assert measured == ["fast 1", "fast 2"] and ws.budget.spent()["compiles"] == 2


def test_one_program_and_the_budget_of_the_measurement_path():
    ws = _workspace()
    one = OneProgram(lambda: ("fast kernel", {"calls": 1}), "profile")
    run_search(one, ws.measure)
    assert one.made is not None and one.made.result["speedup"] == 2.0 and one.meta == {"calls": 1}
    assert ws.files[PROGRAM] == "fast kernel" and ws.budget.spent()["measurements"] == 1
    with pytest.raises(BudgetExceeded):  # the same strategy under no compile budget: nothing is built
        run_search(OneProgram(lambda: ("fast kernel", {}), "profile"), _workspace("compiles=0").measure)


class _Scripted:
    """A model client replying with the scripted tool calls, one reply per turn."""

    forces_tools = False

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = turns

    def complete(self, system: str, messages: list[dict[str, Any]], **kw: Any) -> Any:
        calls = self.turns.pop(0) if self.turns else []
        return SimpleNamespace(text="", tool_calls=calls)


def test_tool_loop_measures_build_calls_in_the_order_the_model_made_them():
    calls = [{"id": "1", "name": "write_file", "arguments": {"path": PROGRAM, "content": "fast"}},
             {"id": "2", "name": "profile", "arguments": {}},
             {"id": "3", "name": "read_file", "arguments": {"path": PROGRAM}},
             {"id": "4", "name": "compile", "arguments": {"path": "missing.py"}}]
    ws = _workspace()
    loop = ToolLoop(_Scripted([calls]), ws, {"max_tokens": 64}, 0, max_turns=3)
    assert run_search(loop, ws.measure) == "the model stopped calling tools"
    replies = [(m["tool_call_id"], m["content"]) for m in loop.messages if m["role"] == "tool"]
    assert [r[0] for r in replies] == ["1", "2", "3", "4"]
    assert replies[1][1].startswith("correct; 1.0 ms") and replies[2][1] == "fast"
    assert replies[3][1].startswith("error: no file") and len(ws.results) == 1 and ws.best["speedup"] == 2.0
