"""GPU GEMM-like reductions, batched or not (C[b.., i, j] = sum_k A.B: matmul, attention scores/context):
a 2-D thread tile per output block (batch axes fused onto blockIdx.z), the operand tiles of each reduce step
staged in shared memory (cache_read "shared" at the reduce-outer loop, fetched by all the block's threads)
and the accumulator in a register. An elementwise epilogue (scale, cast, bias, activation) is computed by
the same thread from that register (reverse_compute_at), so the task stays one kernel.

Memory-layer variant: the shared tiles' rows padded (storage_align: a row stride of tk + 1 words, so the
threads of a warp reading down a column of a transposed operand, K in Q.K^T, hit distinct banks). Double
buffering is not offered: TVM 0.27's lowering emits the same CUDA with or without the double_buffer
annotation on these tiles, and its software pipelining needs list-valued annotations the IR cannot state.
Declines: no single GEMM-like block (two spatial + one reduce loop at least), extents the tiles do not
divide, or other blocks than an elementwise epilogue after it."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates

NAME = "gpu.shared_matmul"
TILES = ((16, 16), (8, 8), (16, 8))  # (output tile = threads per side, reduce step)


def _gemm_like(ctx: RuleContext):
    """(main block, epilogue blocks) or None: one reduction with >= 2 spatial and 1 reduce loop, spatial
    loops before the reduce loop, followed only by spatial-only blocks of the same output shape."""
    reds = [b for b in ctx.infos if b.is_reduction]
    if len(reds) != 1 or any(b.is_ordered for b in ctx.infos):
        return None
    m = reds[0]
    if len(m.spatial) < 2 or len(m.reduce) != 1 or m.reduce[0] != len(m.extents) - 1 or not m.reuse:
        return None
    after = ctx.infos[ctx.infos.index(m) + 1:]
    out_shape = tuple(m.extents[i] for i in m.spatial)
    if any(b.is_reduction or b.extents != out_shape for b in after):
        return None
    return m, after


def _stage_shared(sk, main: str, k0: str, tile: int, tk: int, pad: bool) -> None:
    """Each operand's tile of this reduce step into shared memory, fetched cooperatively by the tile x tile
    threads (consecutive threads take consecutive elements: coalesced)."""
    for idx in (0, 1):
        blk = sk.mem_do("cache_read", block=main, buffer=idx, scope="shared", at=k0)[0]
        loops = sk.loops(blk)
        inner = loops[loops.index(k0) + 1:]
        fused = sk.do("fuse", loops=inner)[0] if len(inner) > 1 else inner[0]
        if sk.extent(fused) % (tile * tile):
            fused_ty_tx = sk.do("split", loop=fused, factors=[None, tile])
            sk.do("bind", loop=fused_ty_tx[1], thread="threadIdx.x")
        else:
            ty_tx = sk.do("split", loop=fused, factors=[None, tile, tile])
            sk.do("bind", loop=ty_tx[1], thread="threadIdx.y")
            sk.do("bind", loop=ty_tx[2], thread="threadIdx.x")
        if pad:
            ndim = len(sk.live.sch.get(sk.live.block(blk)).writes[0].source.shape)
            sk.mem_do("storage_align", block=blk, buffer=0, axis=ndim - 2, factor=tk, offset=1)


def _schedule(sk, ctx: RuleContext, m, epilogue: list, tile: int, tk: int, pad: bool) -> None:
    done = set(inline_intermediates(sk, ctx.infos))
    epilogue = [b for b in epilogue if b.name not in done]
    if len(epilogue) > 1:
        for b in epilogue[:-1]:
            sk.do("compute_inline", block=b.name)
        epilogue = epilogue[-1:]
    *batch, i, j, k = sk.loops(m.name)
    i0, i1 = sk.do("split", loop=i, factors=[None, tile])
    j0, j1 = sk.do("split", loop=j, factors=[None, tile])
    k0, k1 = sk.do("split", loop=k, factors=[None, tk])
    bz = (sk.do("fuse", loops=batch)[0] if len(batch) > 1 else batch[0]) if batch else None
    # thread loops outside the reduce loops: the accumulator's write-back (and the epilogue) follows the
    # whole reduction; the shared fetch at k0 still covers the block's tile (compute_at relaxes the
    # threadIdx loops for a shared buffer)
    sk.do("reorder", loops=([bz] if bz else []) + [i0, j0, i1, j1, k0, k1])
    if bz:
        sk.do("bind", loop=bz, thread="blockIdx.z")
    sk.do("bind", loop=i0, thread="blockIdx.y")
    sk.do("bind", loop=j0, thread="blockIdx.x")
    sk.do("bind", loop=i1, thread="threadIdx.y")
    sk.do("bind", loop=j1, thread="threadIdx.x")
    if epilogue:  # the epilogue reads the accumulator where the thread holds it: one kernel, C in a register
        sk.do("reverse_compute_at", block=epilogue[0].name, loop=j1)
        sk.mem_do("set_scope", block=m.name, buffer=0, scope="local")
    else:
        sk.mem_do("cache_write", block=m.name, buffer=0, scope="local", at=j1)
    _stage_shared(sk, m.name, k0, tile, tk, pad)
    sk.do("decompose_reduction", block=m.name, loop=k0)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    found = _gemm_like(ctx)
    if found is None:
        return None
    m, epilogue = found
    si, sj = m.spatial[-2], m.spatial[-1]
    out = []
    for tile, tk in TILES:
        if m.extents[si] % tile or m.extents[sj] % tile or m.extents[m.reduce[0]] % tk:
            continue
        for pad in (True, False) if (tile, tk) == TILES[0] else (False,):  # padding on the first tile only

            def build(sk, tile=tile, tk=tk, pad=pad):
                _schedule(sk, ctx, m, epilogue, tile, tk, pad)
            ir = ctx.attempt(NAME, {"tile": tile, "tk": tk, "pad": pad}, build)
            if ir is not None:
                out.append(ir)
    return out or None
