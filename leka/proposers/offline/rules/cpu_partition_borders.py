"""Border partitioning: stencils whose padding (reflect, clamp, zero) is written into their index
expressions test it with if_then_else on every tap of every output, which keeps LLVM from vectorising
the loop at all. TVM's loop partition splits a loop annotated with pragma_loop_partition_hint into border
pieces and a branch-free interior; the interior then vectorises like a plain stencil (box filter 5x5 over
120x160x3: 432 us -> 27 us with the channel loop fused into the row and the rows in parallel).

Variants: parallel or serial; short channel loops fused or unrolled; padding stages inlined into their consumers first (their branches are then
partitioned away too) or kept."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, parallel_outer
from ..sketch import Sketch

NAME = "cpu.partition_borders"
HINT = "pragma_loop_partition_hint"
STENCIL_MIN_WORK = 4096  # outputs; each is a whole window of taps, so threads pay off sooner than elementwise


def _partition(sk: Sketch, name: str, spatial: list[int], lanes: int, cores: int, parallel: bool,
               fuse: bool) -> None:
    loops = sk.loops(name)
    sp = [loops[i] for i in spatial]
    # trailing spatial loops shorter than a vector (colour channels) join their parent: one contiguous
    # run; or, when the body branches on that index (demosaic's per-channel formulas), are unrolled so
    # LLVM specialises each copy
    while len(sp) > 2 and sp[-1] == loops[-1] and sk.extent(sp[-1]) < lanes:
        if not fuse:
            sk.do("unroll", loop=sp[-1])
            sp = sp[:-1]
            break
        sp = sp[:-2] + sk.do("fuse", loops=sp[-2:])
        loops = sk.loops(name)
    if parallel and len(sp) > 1:
        fused = parallel_outer(sk, sp[:1], cores, STENCIL_MIN_WORK)
        sp = ([fused] if fused else sp[:1]) + sp[1:]
    for lp in sp:
        sk.do("annotate", target=lp, key=HINT, value=1)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu" or not any(b.border_condition for b in ctx.infos):
        return None
    out = []
    for parallel, fuse, inline_padding in ((True, True, False), (True, False, False), (False, True, False),
                                           (True, True, True)):
        def build(sk: Sketch, parallel: bool = parallel, fuse: bool = fuse, inline_padding: bool = inline_padding) -> None:
            done = set(inline_intermediates(sk, ctx.infos, inline_padding=inline_padding))
            for b in ctx.infos:
                if b.name in done or b.is_ordered or len(b.loops) != len(b.kinds) or not b.spatial:
                    continue
                _partition(sk, b.name, b.spatial, lanes_for(ctx.facts, b.dtype_bits), ctx.cores, parallel, fuse)
        knobs = {"parallel": parallel} | ({} if fuse else {"fuse_short": False}) \
            | ({"inline_padding": True} if inline_padding else {})
        ir = ctx.attempt(NAME, knobs, build)
        if ir is not None:
            out.append(ir)
    return out or None
