"""GPU (CUDA/OpenCL) fallback: per block, fuse the spatial loops, split by a thread count that divides
the extent, bind blockIdx.x / threadIdx.x; reduction loops stay inside each thread."""
from __future__ import annotations

import functools
import math

from leka.ir import CandidateIR, IRApplyError

from ..context import RuleContext
from ..cpu_plan import inline_intermediates

NAME = "gpu.bind_spatial"


WARP = 32


def threads_for(extent: int, cap: int, prefer: int) -> int:
    """Threads per block dividing `extent` (LiveSchedule splits only by divisors): a power of two from a
    warp up; else the divisor nearest `prefer` from a warp to the cap (an output of 49x257 or 313x1034
    has no power-of-two divisor above 2, and 1- or 2-thread blocks ran 2-16x slower than dlight's on the
    H200); else the largest small power of two."""
    for t in (prefer, 256, 128, 64, 512, WARP, 1024):
        if t <= cap and t <= extent and extent % t == 0:
            return t
    near = [d for d in range(WARP, min(cap, extent) + 1) if extent % d == 0]
    if near:
        return min(near, key=lambda d: (abs(math.log(d / prefer)), -d))
    return next((t for t in (16, 8, 4, 2) if t <= extent and extent % t == 0), 1)


def divisor_at_most(n: int, want: int) -> int:
    """The largest divisor of n up to `want` (LiveSchedule splits only by divisors: 1081 terms -> 47)."""
    return next(d for d in range(min(n, want), 0, -1) if n % d == 0)


def fuse_spatial(sk, b) -> str | None:
    """Spatial loops first (reduction loops after them), fused into one; None when the block has none."""
    loops = sk.loops(b.name)
    sp = [loops[i] for i in b.spatial]
    if not sp:
        return None
    if [loops.index(s) for s in sp] != list(range(len(sp))):
        sk.do("reorder", loops=sp + [loops[i] for i in b.reduce])
    return sk.do("fuse", loops=sp)[0] if len(sp) > 1 else sp[0]


def bind_flat(sk, b, cap: int, prefer: int, vec: int = 1) -> str | None:
    """One output element (or `vec` adjacent ones, vectorised: 16-byte loads/stores) per thread; returns the
    threadIdx.x loop."""
    fused = fuse_spatial(sk, b)
    if fused is None:
        return None
    ext = sk.extent(fused)
    if vec > 1 and ext % vec == 0 and not b.reduce:
        rest, inner = sk.do("split", loop=fused, factors=[None, vec])
        t = threads_for(ext // vec, cap, prefer)
        bx, tx = sk.do("split", loop=rest, factors=[None, t])
        sk.do("vectorize", loop=inner)
    else:
        bx, tx = sk.do("split", loop=fused, factors=[None, threads_for(ext, cap, prefer)])
    sk.do("bind", loop=bx, thread="blockIdx.x")
    sk.do("bind", loop=tx, thread="threadIdx.x")
    return tx


def epilogue_of(infos, done, red) -> list:
    """The blocks after the last reduction `red` (its intermediates inlined: `done`) when every one is an
    elementwise epilogue of its outputs (bias, batch norm, activation, cast: one element per output of
    `red`); else [] (a softmax's normalisation spans a row per reduced value: not an epilogue)."""
    if red is None:
        return []
    n = int(math.prod(red.extents[i] for i in red.spatial))
    later = [b for b in infos[infos.index(red) + 1:] if b.name not in done]
    ok = later and all(not b.is_reduction and not b.is_ordered and b.iterations == n for b in later)
    return later if ok else []


def fuse_epilogue(sk, red, epilogue: list, loop: str) -> None:
    """`epilogue` computed under `loop` of the reduction's kernel (reverse_compute_at: the thread that owns
    the reduced value, or its block), not in launches of its own; the reduced value stays in a register
    (every lane of a cross-thread reduction gets TVM's allreduce result there, so none reads a buffer that
    lane 0 writes)."""
    for b in epilogue:
        sk.do("reverse_compute_at", block=b.name, loop=loop)
    sk.mem_do("set_scope", block=red.name, buffer=0, scope="local")


def last_reduction(infos, done):
    return next((b for b in reversed(infos) if b.is_reduction and b.name not in done), None)


def max_threads(ctx: RuleContext) -> int:
    return int(ctx.target.get("max_threads_per_block", 256))


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    out = []
    for prefer in (256, 128, 64):
        # the reduction's elementwise epilogue in the reduction's thread (one launch, not two) where it has
        # one; else one kernel per block as before
        for fuse in (True, False):
            ir = ctx.attempt(NAME, {"threads": prefer, **({"epilogue": True} if fuse else {})},
                             functools.partial(_build, ctx=ctx, prefer=prefer, fuse=fuse))
            if ir is not None:
                out.append(ir)
                break
    return out or None


def _build(sk, ctx: RuleContext, prefer: int, fuse: bool) -> None:
    done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
    red = last_reduction(ctx.infos, done)
    epi = epilogue_of(ctx.infos, done, red) if fuse else []
    if fuse and not epi:
        raise IRApplyError("no elementwise epilogue to fuse")
    for b in ctx.infos:
        if b.name not in done and b not in epi:
            tx = bind_flat(sk, b, max_threads(ctx), prefer)
            if b is red and epi:
                if tx is None:  # what a step on loop None did: TVM refused it, the variant dropped
                    raise IRApplyError(f"{b.name}: no spatial loop to fuse the epilogue under")
                fuse_epilogue(sk, red, epi, tx)
