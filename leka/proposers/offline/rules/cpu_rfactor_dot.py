"""CPU dot-product reductions (GEMV, x @ W^T, row sums/max): the reduce loop is innermost and contiguous,
so split it by the vector width and rfactor the lanes into a partial-sum buffer that vectorises."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, schedule_rest, vector_width

NAME = "cpu.rfactor_dot"


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None

    def lanes(b):
        return lanes_for(ctx.facts, b.dtype_bits)

    dots = [b for b in ctx.infos if b.is_reduction and b.is_float and b.reduce_contiguous and b.kinds[-1] == "R"
            and vector_width(b.extents[-1], lanes(b))]
    if not dots:
        return None
    out = []
    for inline in (True, False):
        def build(sk, inline=inline):
            done = set(inline_intermediates(sk, ctx.infos)) if inline else set()
            schedule_rest(sk, ctx.infos, done, lanes, ctx.cores, rfactor=True)
        ir = ctx.attempt(NAME, {"inline": inline}, build)
        if ir is not None:
            out.append(ir)
    return out or None
