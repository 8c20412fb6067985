"""A candidate under construction: applies steps to a live schedule and records them per layer."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR, IRApplyError, MemoryLayer, ScheduleLayer, Step
from leka.ir.live import LiveSchedule


class Sketch:
    def __init__(self, base: CandidateIR):
        self.base = base
        self.live: LiveSchedule = base.apply()  # trusted: the task's or a built-in rewrite's function
        self.sched: list[Step] = list(base.schedule.steps)
        self.mem: list[Step] = list(base.memory.steps)

    def do(self, op: str, **args: Any) -> list[str]:
        """Apply a schedule step; IRApplyError propagates (the rule drops that variant)."""
        step = Step(op, args)
        created = self.live.apply(step)
        self.sched.append(step)
        return created

    def try_do(self, op: str, **args: Any) -> list[str] | None:
        """Apply if TVM accepts it (e.g. an inline that may be illegal); None otherwise, state unchanged."""
        try:
            return self.do(op, **args)
        except IRApplyError:
            return None

    def mem_do(self, op: str, **args: Any) -> list[str]:
        step = Step(op, {**args, "after": len(self.sched) - 1 if self.sched else -1})
        created = self.live.apply(step)
        self.mem.append(step)
        return created

    def loops(self, block: str) -> list[str]:
        return self.live.loops_of(block)

    def live_block_of(self, loop: str) -> str:
        """The first block nested under the loop (by its name table)."""
        for b in self.live.block_names():
            if loop in self.live.loops_of(b):
                return b
        raise IRApplyError(f"no block under loop {loop}")

    def extent(self, loop: str) -> int:
        return self.live.extent(loop) or 1

    def result(self, rule: str, knobs: dict[str, Any]) -> CandidateIR:
        ir = self.base.with_layer("schedule", ScheduleLayer(tuple(self.sched)))
        ir = ir.with_layer("memory", MemoryLayer(tuple(self.mem)))
        return ir.with_notes(rule=rule, knobs=knobs)
