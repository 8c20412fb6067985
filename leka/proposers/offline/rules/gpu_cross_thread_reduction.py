"""GPU reductions (softmax, layer norm, pooling, row sums, GEMV): one thread block per output element,
the reduction loop split over the block's threads (threadIdx.x bound to a reduction loop: TVM lowers it
to a warp-shuffle + shared-memory allreduce); spatial blocks get one element per thread. Declines when
no reduction is long enough to share (fewer than 32 terms) or the outputs are few and long (a GEMM:
gpu.shared_matmul's)."""
from __future__ import annotations

import functools

import numpy as np

from leka.ir import CandidateIR, IRApplyError

from ..context import RuleContext
from ..cpu_plan import inline_intermediates
from .gpu_bind_spatial import (bind_flat, divisor_at_most, epilogue_of, fuse_epilogue, fuse_spatial,
                               last_reduction, max_threads)

NAME = "gpu.cross_thread_reduction"
MIN_TERMS = 32


def _terms(b) -> int:
    return int(np.prod([b.extents[i] for i in b.reduce])) if b.reduce else 0


def _lanes(terms: int, threads: int) -> int:
    pow2 = min(threads, 1 << (terms.bit_length() - 1))
    if terms % pow2 == 0:
        return pow2
    d = divisor_at_most(terms, threads)
    return d if d >= MIN_TERMS // 2 else pow2


def _reduce_over_threads(sk, b, threads: int) -> str | None:
    """One block per output of `b`, its terms over `threads` lanes; returns the blockIdx.x loop."""
    fused = fuse_spatial(sk, b)
    loops = sk.loops(b.name)
    red = loops[len(loops) - len(b.reduce):]
    r = sk.do("fuse", loops=red)[0] if len(red) > 1 else red[0]
    _, tx = sk.do("split", loop=r, factors=[None, threads])
    if fused is not None:
        sk.do("bind", loop=fused, thread="blockIdx.x")
    sk.do("bind", loop=tx, thread="threadIdx.x")
    return fused


def _build(sk, ctx: RuleContext, reds: list, per: dict, fuse: bool) -> None:
    """Reductions over threads, the rest one element per thread; with `fuse`, the last reduction's
    elementwise epilogue in its block (one launch for both: dlight's GeneralReduction keeps it there too)."""
    done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
    last = last_reduction(ctx.infos, done)
    epi = epilogue_of(ctx.infos, done, last) if fuse and last in reds else []
    if fuse and not epi:
        raise IRApplyError("no elementwise epilogue to fuse")
    for b in ctx.infos:
        if b.name in done or b in epi:
            continue
        if b in reds:
            bx = _reduce_over_threads(sk, b, per[b.name])
            if b is last and epi:
                if bx is None:
                    raise IRApplyError(f"{b.name}: one output, no block loop to fuse under")
                fuse_epilogue(sk, b, epi, bx)
        else:
            bind_flat(sk, b, max_threads(ctx), 256)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    reds = [b for b in ctx.infos if b.is_reduction and not b.is_ordered and _terms(b) >= MIN_TERMS]
    if not reds:
        return None
    cap = max_threads(ctx)
    out, seen = [], set()
    for threads in (256, 128, 64, 32):
        if threads > cap or threads > 2 * max(_terms(b) for b in reds):
            continue
        # threads per reduction: a divisor of its terms (1081 = 23 x 47 takes 47, not a power of two that
        # cannot split it); a reduction with no divisor >= MIN_TERMS / 2 (257, prime) stays as it was asked
        per = {b.name: _lanes(_terms(b), threads) for b in reds}
        if tuple(sorted(per.items())) in seen:
            continue
        seen.add(tuple(sorted(per.items())))

        for fuse in (True, False):
            ir = ctx.attempt(NAME, {"threads": threads, **({"epilogue": True} if fuse else {})},
                             functools.partial(_build, ctx=ctx, reds=reds, per=per, fuse=fuse))
            if ir is not None:
                out.append(ir)
                break
    return out or None
