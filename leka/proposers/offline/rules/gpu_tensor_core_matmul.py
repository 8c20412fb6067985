"""fp16 GEMM-like reductions on tensor cores (CUDA, sm_70 and newer): C[b.., i, j] = sum_k A[b.., i, k] .
B[b.., k, j] (or B[b.., j, k]: Q.K^T) with float16 operands, accumulated in float32 (casts in the body) or in
float16, through TVM 0.27's WMMA intrinsics (16x16x16 fragments, one warp each).

Schedule: a thread block computes a (wy.fi.16) x (wx.fj.16) output tile with wy.wx warps (threadIdx.y),
each warp fi x fj accumulator fragments; every reduce step stages kc.16 columns of both operands in shared
memory (rows padded by 8 halves: stride a multiple of 8 as WMMA needs, off the bank period), fetched by all
threads with vector loads; the fragments are loaded, multiplied and filled by the tensorized
load/sync/fill intrinsics; each warp stores its fragments to a shared tile, and the block's threads write that
tile out with the elementwise epilogue (scale, cast, bias, activation) inlined, so the task stays one kernel.

Declines (None): other targets than CUDA at sm_70+ (OpenCL, sm_53), operands that are not float16, an
accumulator that is neither float32 nor float16, A read as [k, i], extents not multiples of 16 (padding is
not attempted: an M of 1 is a GEMV, not a tensor-core shape), several reductions, non-elementwise epilogues.
"""
from __future__ import annotations

import re
from typing import Any

from leka.ir import CandidateIR, IRApplyError

from ..context import RuleContext
from ..cpu_plan import inline_intermediates
from .gpu_shared_matmul import _gemm_like

NAME = "gpu.tensor_core_matmul"
MIN_SM = 70  # Volta: the first architecture with WMMA
FRAG = 16
WARP = 32
# (warps along i, warps along j, fragments per warp along i, along j, 16-wide k chunks per shared stage)
TILES = ((2, 2, 2, 2, 2), (2, 2, 1, 1, 2), (2, 2, 2, 2, 1), (1, 1, 2, 2, 2))
ACC = {"float32": "f32", "float16": "f16"}


def _sm(target: dict[str, Any]) -> int:
    m = re.fullmatch(r"sm_(\d+)a?", str(target.get("arch", "")))
    return int(m.group(1)) if m else 0


def _operands(ctx: RuleContext, m) -> tuple[bool, str] | None:
    """(B read as [j, k], accumulator suffix) when the block reads two float16 operands A[.., i, k] and
    B[.., k, j] / B[.., j, k] and accumulates in float32 or float16; None otherwise."""
    live = ctx.base.apply()
    blk = live.sch.get(live.block(m.name))
    ivs = [iv.var.name for iv in blk.iter_vars]
    if len(ivs) != len(m.extents) or len(blk.reads) != 2:
        return None
    i, j, k = ivs[m.spatial[-2]], ivs[m.spatial[-1]], ivs[m.reduce[0]]

    def last2(reg) -> list[str]:  # the iterators of the two innermost indices
        return [str(r.min) for r in reg.region[-2:]]
    a, b = blk.reads
    if any(str(r.source.dtype) != "float16" for r in blk.reads) or len(a.region) < 2 or len(b.region) < 2:
        return None
    acc = ACC.get(str(blk.writes[0].source.dtype))
    if acc is None or last2(a) != [i, k] or last2(b) not in ([k, j], [j, k]):
        return None
    return last2(b) == [j, k], acc


def _fetch(sk, main: str, idx: int, at: str, warps: int) -> None:
    """Operand tile of this reduce step into shared memory: all threads, vector loads, rows padded."""
    blk = sk.mem_do("cache_read", block=main, buffer=idx, scope="shared", at=at)[0]
    loops = sk.loops(blk)
    fused = sk.do("fuse", loops=loops[loops.index(at) + 1:])[0]
    vec = next((v for v in (4, 2, 1) if sk.extent(fused) % (warps * WARP * v) == 0), None)
    if vec is None:
        raise IRApplyError(f"a tile of {sk.extent(fused)} elements does not spread over {warps * WARP} threads")
    _, ty, tx, v = sk.do("split", loop=fused, factors=[None, warps, WARP, vec])
    sk.do("bind", loop=ty, thread="threadIdx.y")
    sk.do("bind", loop=tx, thread="threadIdx.x")
    sk.do("vectorize", loop=v)
    ndim = len(sk.live.sch.get(sk.live.block(blk)).writes[0].source.shape)
    sk.mem_do("storage_align", block=blk, buffer=0, axis=ndim - 2, factor=16, offset=8)


def _tensorize_2d(sk, block: str, intrin: str) -> None:
    """Split the block's last two loops by 16, fragment loops outside, and tensorize the 16x16 part."""
    a, b = sk.loops(block)[-2:]
    a0, a1 = sk.do("split", loop=a, factors=[None, FRAG])
    b0, b1 = sk.do("split", loop=b, factors=[None, FRAG])
    sk.do("reorder", loops=[a0, b0, a1, b1])
    sk.do("tensorize", target=a1, intrin=intrin)


def _schedule(sk, ctx: RuleContext, m, epilogue: list, tile: tuple[int, ...], trans_b: bool, acc: str) -> None:
    wy, wx, fi, fj, kc = tile
    done = set(inline_intermediates(sk, ctx.infos))
    epilogue = [b.name for b in epilogue if b.name not in done]
    *batch, i, j, k = sk.loops(m.name)
    i0, i1, i2, i3 = sk.do("split", loop=i, factors=[None, wy, fi, FRAG])
    j0, j1, j2, j3 = sk.do("split", loop=j, factors=[None, wx, fj, FRAG])
    k0, k1, k2 = sk.do("split", loop=k, factors=[None, kc, FRAG])
    bz = (sk.do("fuse", loops=batch)[0] if len(batch) > 1 else batch[0]) if batch else None
    sk.do("reorder", loops=([bz] if bz else []) + [i0, j0, i1, j1, k0, k1, i2, j2, i3, j3, k2])
    if bz:
        sk.do("bind", loop=bz, thread="blockIdx.z")
    sk.do("bind", loop=i0, thread="blockIdx.y")
    sk.do("bind", loop=j0, thread="blockIdx.x")
    warp = sk.do("fuse", loops=[i1, j1])[0]
    sk.do("bind", loop=warp, thread="threadIdx.y")
    # accumulator fragments -> a shared tile per warp -> the output (with the epilogue) by the block's threads
    out_tile = sk.mem_do("cache_write", block=m.name, buffer=0, scope="shared")[0]
    frags = sk.mem_do("cache_write", block=m.name, buffer=0, scope="wmma.accumulator")[0]
    sk.do("reverse_compute_at", block=frags, loop=warp)
    sk.do("reverse_compute_at", block=out_tile, loop=warp)
    for e in epilogue[:-1]:
        sk.do("compute_inline", block=e)
    if epilogue:
        sk.do("reverse_compute_inline", block=epilogue[-1])
    for idx in (0, 1):
        _fetch(sk, m.name, idx, k0, wy * wx)
    for idx, ab in ((0, "a"), (1, "b")):
        frag = sk.mem_do("cache_read", block=m.name, buffer=idx, scope=f"wmma.matrix_{ab}", at=k1)[0]
        _tensorize_2d(sk, frag, f"wmma_load_16x16x16_f16_{ab}{'_trans' if ab == 'b' and trans_b else ''}_shared")
    init = sk.do("decompose_reduction", block=m.name, loop=k0)[0]
    sk.do("tensorize", target=sk.loops(init)[-2], intrin=f"wmma_fill_16x16x16_{acc}")
    sk.do("tensorize", target=i3, intrin=f"wmma_sync_16x16x16_f16f16{acc}{'_trans' if trans_b else ''}")
    _tensorize_2d(sk, frags, f"wmma_store_16x16x16_{acc}_shared")
    _write_out(sk, out_tile, warp)


def _write_out(sk, block: str, warp: str) -> None:
    """The shared tile -> output copy (epilogue inlined into it) under the warp loop: one element per lane."""
    loops = sk.loops(block)
    fused = sk.do("fuse", loops=loops[loops.index(warp) + 1:])[0]
    _, tx = sk.do("split", loop=fused, factors=[None, WARP])
    sk.do("bind", loop=tx, thread="threadIdx.x")


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cuda" or _sm(ctx.target) < MIN_SM:
        return None
    found = _gemm_like(ctx)
    if found is None:
        return None
    m, epilogue = found
    ops = _operands(ctx, m)
    if ops is None:
        return None
    trans_b, acc = ops
    ei, ej, ek = m.extents[m.spatial[-2]], m.extents[m.spatial[-1]], m.extents[m.reduce[0]]
    if ei % FRAG or ej % FRAG or ek % FRAG:
        return None
    out = []
    for tile in TILES:
        wy, wx, fi, fj, kc = tile
        if ei % (wy * fi * FRAG) or ej % (wx * fj * FRAG) or ek % (kc * FRAG):
            continue

        def build(sk, tile=tile):
            _schedule(sk, ctx, m, epilogue, tile, trans_b, acc)
        ir = ctx.attempt(NAME, dict(zip(("wy", "wx", "fi", "fj", "kc"), tile)), build)
        if ir is not None:
            out.append(ir)
    return out or None
