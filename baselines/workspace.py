"""The flat-program workspace of the generation baselines: one TVMScript file and the tools a coding
agent uses on it (read_task, read_file, write_file, edit_file, compile, run_tests, profile).

Every tool that builds code goes through the run's evaluator and is charged to the attempt's budget
exactly as a LEKA candidate is: `compile` and `run_tests` one compile (they share one correctness
evaluation of the same text: asking both costs one compile), `profile` one compile and one
measurement. Tool results are journaled per attempt (key = call number), so a resumed attempt gets
the same results back without paying twice, and a model conversation replays identically (its calls
then hit the LLM response cache).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from leka.budget import BudgetExceeded
from leka.errors import LekaError, one_line
from leka.methods.search import Candidate, Measured

PROGRAM = "kernel.py"

TOOLS: list[dict[str, Any]] = [
    {"name": "read_task", "description": "The task: what is computed, argument shapes/dtypes, target facts.",
     "parameters": {"type": "object", "properties": {}}},
    {"name": "read_file", "description": f"Read a workspace file ({PROGRAM} holds the current kernel).",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Replace a file's whole content (the kernel is one TVMScript PrimFunc).",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"]}},
    {"name": "edit_file", "description": "Replace one exact, unique occurrence of old with new in a file.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "old": {"type": "string"},
                                                     "new": {"type": "string"}},
                    "required": ["path", "old", "new"]}},
    {"name": "compile", "description": "Build the kernel file for the target; returns the compiler error if any.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "run_tests", "description": "Compile and check the kernel against the reference on random inputs.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "profile", "description": "Compile, check and time the kernel against the naive lowering (speedup).",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def initial_program(task: Any, target: Any) -> str:
    """The task's definition lowered with no schedule: the flat program both baselines start from."""
    from leka.ir import CandidateIR

    return CandidateIR.initial(task).to_tvmscript(target)


def _not_utf8(args: dict[str, Any]) -> str | None:
    """Why a write's text is not a file (a lone surrogate, which JSON can carry and UTF-8 cannot), or None."""
    for key in ("content", "old", "new", "path"):
        try:
            str(args.get(key, "")).encode("utf-8")
        except UnicodeEncodeError as e:
            return f"'{key}' is not UTF-8 text ({e.reason} at character {e.start}); nothing written"
    return None


@dataclass
class Workspace:
    """One attempt's files, its evaluations and its best measured program."""

    task: Any
    target: Any
    evaluate: Callable[[str, bool], dict[str, Any]]  # (source, measure) -> EvalResult JSON, uncharged
    budget: Any  # what the attempt charges (leka.budget.Budget or methods.options.BothBudgets)
    journal: Any = None  # get(key) / put(key, value); None: no journal
    files: dict[str, str] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)  # every evaluation, in order
    best: dict[str, Any] | None = None  # best correct *profiled* result (with "source")
    calls: int = 0
    _by_source: dict[tuple[str, bool], dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if PROGRAM not in self.files:  # the lowering is only built when no program was handed in
            self.files[PROGRAM] = initial_program(self.task, self.target)

    # -- the tool dispatcher --------------------------------------------------------------------
    def call(self, name: str, args: dict[str, Any]) -> str:
        """Run tool `name`; the text result goes back to the model. BudgetExceeded propagates."""
        self.calls += 1
        key = f"tool{self.calls}"
        if self.journal is not None and (hit := self.journal.get(key)) is not None:
            self._restore(hit)
            return hit["reply"]
        try:
            reply = self._dispatch(name, args)
        except BudgetExceeded:
            raise
        except LekaError as e:
            reply = f"error: {e}"
        if self.journal is not None:
            self.journal.put(key, {"reply": reply, "files": dict(self.files), "result": self._last_of(name)})
        return reply

    def _last_of(self, name: str) -> dict[str, Any] | None:
        return self.results[-1] if name in ("compile", "run_tests", "profile") and self.results else None

    def _restore(self, hit: dict[str, Any]) -> None:
        self.files = dict(hit.get("files") or self.files)
        if hit.get("result"):
            self._record(hit["result"])

    def _dispatch(self, name: str, args: dict[str, Any]) -> str:
        if "_unparsed" in args:
            return f"error: the arguments of {name} are not a JSON object: {one_line(args['_unparsed'], 200)}"
        path = str(args.get("path") or PROGRAM)
        if name == "read_task":
            return json.dumps({"task": self.task.summary(), "target": self.target.name,
                               "facts": self.target.facts, "program": PROGRAM}, sort_keys=True)
        if name == "read_file":
            return self.files.get(path, f"error: no file {path!r}; files: {', '.join(sorted(self.files))}")
        if name in ("write_file", "edit_file") and (bad := _not_utf8(args)):
            return f"error: {name}: {bad}"
        if name == "write_file":
            self.files[path] = str(args.get("content", ""))
            return f"wrote {path} ({len(self.files[path])} characters)"
        if name == "edit_file":
            return self._edit(path, str(args.get("old", "")), str(args.get("new", "")))
        if name in ("compile", "run_tests", "profile"):
            if path not in self.files:
                return f"error: no file {path!r}"
            return self._evaluate_tool(name, self.files[path])
        return f"error: unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}"

    def _edit(self, path: str, old: str, new: str) -> str:
        text = self.files.get(path)
        if text is None:
            return f"error: no file {path!r}"
        n = text.count(old) if old else 0
        if n != 1:
            return f"error: 'old' occurs {n} times in {path}; it must occur exactly once"
        self.files[path] = text.replace(old, new, 1)
        return f"edited {path}"

    # -- evaluations ----------------------------------------------------------------------------
    def _evaluate_tool(self, name: str, source: str) -> str:
        measure = name == "profile"
        res = self.evaluate_source(source, measure)
        if not res.get("compiled"):
            return f"compile error: {one_line(res.get('error') or res.get('failure'), 1500)}"
        if name == "compile":
            return "compiled"
        if not res.get("correct"):
            return f"{res.get('failure') or 'wrong'}: {one_line(res.get('error'), 1500)}"
        if not measure:
            return "correct on every trial"
        return (f"correct; {res.get('candidate_ms')} ms vs naive {res.get('baseline_ms')} ms: "
                f"speedup {res.get('speedup')}")

    def evaluate_source(self, source: str, measure: bool) -> dict[str, Any]:
        """Charge and evaluate `source` (a correctness-only result of the same text is reused)."""
        cached = self._by_source.get((source, measure))
        if cached is not None:
            return cached
        if self.budget is not None:
            self.budget.check_time()
            kinds = ["compiles"] + (["measurements"] if measure else [])
            for kind in kinds:  # refuse before spending anything
                if not self.budget.can_afford(kind):
                    self.budget.charge(kind)  # raises BudgetExceeded
            for kind in kinds:
                self.budget.charge(kind)
        res = dict(self.evaluate(source, measure))
        res["source"] = source
        res["measured"] = measure
        self._record(res)
        return res

    def _record(self, res: dict[str, Any]) -> None:
        self._by_source[(res.get("source", ""), bool(res.get("measured")))] = res
        self.results.append(res)
        if res.get("measured") and res.get("correct") and res.get("speedup") is not None:
            if self.best is None or res["speedup"] > self.best["speedup"]:
                self.best = res

    def measure(self, cand: Candidate) -> Measured:
        """The search's one measurement path (leka.methods.search): write the candidate's program (when it
        brings one) and run its build tool, charged and journaled like any tool call."""
        if cand.source is not None and self.files.get(cand.path) != cand.source:
            self.call("write_file", {"path": cand.path, "content": cand.source})
        reply = self.call(cand.kind, {"path": cand.path})
        source = self.files.get(cand.path)
        result = self._by_source.get((source, cand.kind == "profile")) if source is not None else None
        return Measured(reply, result)

    def final(self) -> dict[str, Any] | None:
        """The attempt's answer: the best profiled correct program, else the last evaluation."""
        return self.best or (self.results[-1] if self.results else None)
