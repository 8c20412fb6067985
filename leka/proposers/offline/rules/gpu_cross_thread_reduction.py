"""GPU reductions (softmax, layer norm, pooling, row sums, GEMV): one thread block per output element,
the reduction loop split over the block's threads (threadIdx.x bound to a reduction loop: TVM lowers it
to a warp-shuffle + shared-memory allreduce); spatial blocks get one element per thread. Declines when
no reduction is long enough to share (fewer than 32 terms) or the outputs are few and long (a GEMM:
gpu.shared_matmul's)."""
from __future__ import annotations

import numpy as np

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates
from .gpu_bind_spatial import bind_flat, divisor_at_most, fuse_spatial, max_threads

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


def _reduce_over_threads(sk, b, threads: int) -> None:
    fused = fuse_spatial(sk, b)
    loops = sk.loops(b.name)
    red = loops[len(loops) - len(b.reduce):]
    r = sk.do("fuse", loops=red)[0] if len(red) > 1 else red[0]
    _, tx = sk.do("split", loop=r, factors=[None, threads])
    if fused is not None:
        sk.do("bind", loop=fused, thread="blockIdx.x")
    sk.do("bind", loop=tx, thread="threadIdx.x")


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

        def build(sk, per=per):
            done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
            for b in ctx.infos:
                if b.name in done:
                    continue
                if b in reds:
                    _reduce_over_threads(sk, b, per[b.name])
                else:
                    bind_flat(sk, b, cap, 256)
        ir = ctx.attempt(NAME, {"threads": threads}, build)
        if ir is not None:
            out.append(ir)
    return out or None
