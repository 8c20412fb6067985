"""`tvm-naive`: the task's definition lowered with no schedule (TVM's DefaultGPUSchedule binding on GPU).
For L3 graphs the Relax module itself (TVM's default build pipeline does the rest)."""
from __future__ import annotations

from typing import Any

from .base import MethodContext, Sample, evaluate_source, register_method


class TvmNaive:
    name = "tvm-naive"
    is_llm = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        from leka.compiler import default_schedule

        mod = default_schedule(task.build(), target, rules="naive")
        return [evaluate_source(ctx, task, mod.script(), self.name, meta={"schedule": "naive"})]


register_method(TvmNaive.name, TvmNaive)
