"""What a rule sees: the task, the IR to start from, target facts, block analysis and feedback."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from leka.ir import CandidateIR, IRApplyError

from .analysis import BlockInfo, analyze
from .sketch import Sketch


@dataclass
class RuleContext:
    task: Any
    base: CandidateIR  # start point: the request's IR with its schedule/memory layers cleared
    family: str
    facts: dict[str, Any]
    target: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    infos: list[BlockInfo] = field(default_factory=list)
    current: CandidateIR | None = None  # the request's IR as given (schedule kept): memory rules build on it

    @classmethod
    def build(cls, task: Any, ir: CandidateIR, preset: Any, history: list[dict[str, Any]]) -> "RuleContext":
        base = ir.with_layer("schedule", []).with_layer("memory", [])
        outputs = {a.name for a in task.outputs}
        infos = analyze(base.apply(), outputs)
        return cls(task, base, preset.family, dict(preset.facts or {}), dict(preset.target), history, infos, ir)

    @property
    def cores(self) -> int:
        return int(self.facts.get("cores") or self.target.get("num-cores") or 1)

    def info(self, name: str) -> BlockInfo:
        return next(b for b in self.infos if b.name == name)

    def attempt(self, rule: str, knobs: dict[str, Any], build: Callable[[Sketch], None],
                start: CandidateIR | None = None) -> CandidateIR | None:
        """Run one variant on a fresh sketch of `start` (default: the base, layers cleared); a step TVM
        refuses drops the variant."""
        sk = Sketch(start or self.base)
        try:
            build(sk)
        except IRApplyError:
            return None
        return sk.result(rule, knobs)
