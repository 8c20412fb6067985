"""Shared pieces of the algorithm rewrites: a fresh schedule over the current algorithm, and the
rewritten function wrapped as a trusted algorithm layer with the rule's origin notes."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR
from leka.ir.layers import AlgorithmLayer

from ..context import RuleContext


def fresh_schedule(ctx: RuleContext) -> Any:
    from tvm import s_tir

    return s_tir.Schedule(ctx.base.base_func(), error_render_level="fast")


def as_candidate(ctx: RuleContext, func: Any, rule: str, knobs: dict[str, Any], note: str) -> CandidateIR:
    func = func.with_attr("global_symbol", "main")
    return ctx.base.with_layer("algorithm", AlgorithmLayer.trusted(func, note)).with_notes(rule=rule, knobs=knobs)


def root_blocks(sch: Any) -> list[Any]:
    return [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
