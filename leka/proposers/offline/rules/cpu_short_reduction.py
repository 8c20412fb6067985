"""CPU reductions over a short window (small matmuls, pooling, box sums, short dots): move the reduce loops
outside the innermost spatial loop, unroll the innermost reduce loop and vectorise the spatial loop, so
each reduce step is one vector multiply-add over neighbouring outputs (the accumulator row stays in
registers). Serial and parallel variants: these kernels are often too small for threads to pay."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, parallel_outer, schedule_rest, vectorize_inner

NAME = "cpu.short_reduction"
MAX_WINDOW = 256  # reduce iterations per output; longer reductions are cpu.tile_reduction's / rfactor's


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    mains = []
    for b in ctx.infos:
        window = 1
        for i in b.reduce:
            window *= b.extents[i]
        # float only: narrow integer sums widened to 32-bit lanes lose to LLVM's own vectoriser
        if b.is_reduction and b.is_float and not b.is_ordered and b.inner_contiguous and len(b.kinds) == len(b.loops) \
                and window <= MAX_WINDOW and len(b.spatial) >= 1:
            mains.append(b)
    if not mains:
        return None
    out = []
    for parallel in (False, True):
        def build(sk, parallel=parallel):
            done = set(inline_intermediates(sk, ctx.infos))
            for b in mains:
                if b.name not in sk.live.block_names():
                    continue
                loops = sk.loops(b.name)
                sp = [loops[i] for i in b.spatial]
                rd = [loops[i] for i in b.reduce]
                sk.do("reorder", loops=sp[:-1] + rd + sp[-1:])
                if sk.extent(rd[-1]) <= 16:
                    sk.do("unroll", loop=rd[-1])
                lanes = lanes_for(ctx.facts, b.dtype_bits)
                vectorize_inner(sk, sp[-1], lanes)
                if parallel and len(sp) > 1:
                    parallel_outer(sk, sp[:-1], ctx.cores)
                sk.do("decompose_reduction", block=b.name, loop=rd[0])
            schedule_rest(sk, ctx.infos, done | {b.name for b in mains},
                          lambda b: lanes_for(ctx.facts, b.dtype_bits), ctx.cores, rfactor=False, parallel=parallel)
        ir = ctx.attempt(NAME, {"parallel": parallel}, build)
        if ir is not None:
            out.append(ir)
    return out or None
