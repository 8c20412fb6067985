"""CPU reductions over a short window (small matmuls, pooling, box sums, short dots): move the reduce loops
outside the innermost spatial loop, unroll the innermost reduce loop and vectorise the spatial loop, so
each reduce step is one vector multiply-add over neighbouring outputs (the accumulator row stays in
registers). Serial and parallel variants: these kernels are often too small for threads to pay."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, parallel_outer, schedule_rest, vectorize_inner

NAME = "cpu.short_reduction"
MAX_WINDOW = 256  # reduce iterations per output; longer reductions are cpu.tile_reduction's / rfactor's,
# except column reductions (the reduce iterator strides through memory, the spatial one is contiguous:
# per-feature statistics over frames), whose only vector form is this one: a row of accumulators


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
                and (window <= MAX_WINDOW or not b.reduce_contiguous) and len(b.spatial) >= 1:
            mains.append(b)
    if not mains:
        return None
    out = []
    # rest=False leaves the other stages to LLVM's own vectoriser: an elementwise stage that calls
    # rsqrt/exp per element can lose to it when vectorised explicitly (cmvn: 36 us against 3.6 us)
    for parallel, rest in ((False, True), (True, True), (False, False)):
        def build(sk, parallel=parallel, rest=rest):
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
            if rest:
                schedule_rest(sk, ctx.infos, done | {b.name for b in mains},
                              lambda b: lanes_for(ctx.facts, b.dtype_bits), ctx.cores, rfactor=False,
                              parallel=parallel)
        knobs = {"parallel": parallel} if rest else {"parallel": parallel, "rest": False}
        ir = ctx.attempt(NAME, knobs, build)
        if ir is not None:
            out.append(ir)
    return out or None
