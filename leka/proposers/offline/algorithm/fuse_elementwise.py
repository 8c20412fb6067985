"""Operator fusion: inline every elementwise intermediate stage (compute_inline) into its consumers, which
removes the intermediate buffers and their round trips through memory (an exp stage of a softmax, a
scale/cast before a reduction, bias/activation chains). Padding stages are a separate variant: inlining
them puts a bounds test in the consumer's inner loop, which pays only when the padded copy is large."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..analysis import keep_as_table
from ..context import RuleContext
from .common import as_candidate, fresh_schedule, inline_bounded

NAME = "alg.fuse_elementwise"


def fuse(ctx: RuleContext, padding: bool):
    """The function with the intermediates inlined and the names of the inlined blocks ([] if none)."""
    sch = fresh_schedule(ctx)
    done = []
    for b in ctx.infos:
        if b.writes_output or b.is_reduction or b.is_ordered or (b.has_condition and not padding) \
                or keep_as_table(b, ctx.infos):
            continue
        try:
            inlined = inline_bounded(sch, b.name)
        except Exception:  # noqa: BLE001 - TVM refuses (not inlinable here): keep the stage
            continue
        if inlined is not None:  # else copies of its expression in every reader would outgrow the bound
            sch = inlined
            done.append(b.name)
    return sch.mod["main"], done


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    out, seen = [], set()
    for padding in (False, True):
        func, done = fuse(ctx, padding)
        if not done or tuple(done) in seen:
            continue
        seen.add(tuple(done))
        out.append(as_candidate(ctx, func, NAME, {"padding": padding},
                                f"fused elementwise stages into their consumers: {', '.join(done)}"))
    return out or None
