"""Split-K: a reduction with few outputs and a long reduce loop cannot use the cores or the vector lanes
through its spatial loops. Split the longest reduce loop into `parts` chunks and rfactor the chunk index
into a partial-result stage (<block>_rf, one row of partial sums per chunk, spatial over chunks) followed
by a short final reduction over the chunks (the original block name). The schedule rules then
parallelise and vectorise the partial stage."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from .common import as_candidate, fresh_schedule

NAME = "alg.split_k"
MIN_REDUCE = 1024  # a shorter reduce loop finishes before splitting it pays
MAX_OUTPUTS = 1024  # with more outputs the spatial loops already feed the cores and lanes


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    cands = []
    for b in ctx.infos:
        if not b.is_reduction or b.is_ordered or not b.is_float:
            continue
        outputs = 1
        for i in b.spatial:
            outputs *= b.extents[i]
        k = max(b.reduce, key=lambda i: b.extents[i])
        if b.extents[k] >= MIN_REDUCE and outputs <= MAX_OUTPUTS:
            cands.append((b, k))
    if len(cands) != 1:  # one clear long reduction; several would multiply the variants
        return None
    b, k = cands[0]
    out = []
    for parts in (4 * ctx.cores, 16 * ctx.cores):
        if b.extents[k] % parts or b.extents[k] // parts < 64:
            continue
        sch = fresh_schedule(ctx)
        loops = sch.get_loops(sch.get_sblock(b.name))
        if len(loops) != len(b.kinds):
            return None
        try:
            ko, _ = sch.split(loops[k], factors=[parts, None])
            sch.rfactor(ko, factor_axis=0)
        except Exception:  # noqa: BLE001 - TVM refuses (e.g. a non-commutative combiner)
            continue
        out.append(as_candidate(ctx, sch.mod["main"], NAME, {"parts": parts, "block": b.name},
                                f"split-K: {b.name} reduce loop of {b.extents[k]} in {parts} partial sums"))
    return out or None
