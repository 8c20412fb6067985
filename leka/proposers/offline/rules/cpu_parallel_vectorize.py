"""CPU fallback for any function: inline elementwise intermediates, parallelise the outer loops of each
block, vectorise its innermost loop where the accesses are contiguous."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import MIN_PARALLEL_WORK, inline_intermediates, lanes_for, schedule_rest

NAME = "cpu.parallel_vectorize"


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None

    def lanes(b):
        return lanes_for(ctx.facts, b.dtype_bits)

    out = []
    # Variants: with/without inlining; serial (on small or contended loops the vector code alone is
    # the win); parallel for small nests too (heavy bodies); vectorised strided accesses (gathers);
    # parallel only, leaving vectorisation to LLVM (integer/narrow types it often does better);
    # short innermost loops fused with their parent to fill a vector; unroll-only (gathers, branches);
    # serial without inlining (the cheapest change: vector code only).
    big = MIN_PARALLEL_WORK
    for inline, parallel, min_work, vector, fuse in (
            (True, True, big, "contiguous", False), (False, True, big, "contiguous", False),
            (True, False, 0, "contiguous", False), (True, True, 4096, "contiguous", False),
            (True, True, 1024, "gather", False), (True, True, big, "none", False),
            (True, True, big, "contiguous", True), (True, False, 0, "contiguous", True),
            (True, False, 0, "unroll", False), (False, False, 0, "contiguous", False)):
        def build(sk, inline=inline, parallel=parallel, min_work=min_work, vector=vector, fuse=fuse):
            done = set(inline_intermediates(sk, ctx.infos)) if inline else set()
            schedule_rest(sk, ctx.infos, done, lanes, ctx.cores, rfactor=False, parallel=parallel,
                          min_work=min_work, vector=vector, fuse_short=fuse)
        knobs = {"inline": inline, "parallel": parallel, "vector": vector} | ({"fuse_short": True} if fuse else {})
        knobs |= {"min_parallel_work": min_work} if parallel else {}
        ir = ctx.attempt(NAME, knobs, build)
        if ir is not None:
            out.append(ir)
    return out or None
