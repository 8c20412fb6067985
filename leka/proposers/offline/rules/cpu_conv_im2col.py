"""CPU NCHW convolution as im2col + a register-tiled GEMM: out[co, p] = sum_k W[co, k] x col[k, p].

On small maps the direct tiles waste lanes: cpu.conv_register_tile vectorises a 6- to 27-wide output row,
cpu.conv_channel_pack declines maps under 100 pixels (its weight copy costs about the convolution). Here
the algorithm layer copies the input into an im2col buffer col[n, ci, kh, kw, p], p = y*W + x (s_tir
`reindex` of the window read, the zero-padding stage inlined into that copy, `transform_layout` to put the
pixels innermost): ci*kh*kw*pixels values, written once and read once per block of output channels. The
convolution and its epilogue are re-indexed (`transform_block_layout`) to iterate over p, so a pixel
vector is one contiguous load from col and one store to the output (as in cpu.pointwise_conv); the weights
are read as they are (W[co, k] broadcast, k = (ci, kh, kw) contiguous), so nothing is transposed. A pixel
count the vector does not divide (6x6 = 36, 13x13 = 169) is padded to the next multiple (s_tir
`pad_einsum`: 48, 176; the im2col copy writes zeros past the map, the epilogue reads the valid part).
Schedule: register tile `reg` output channels x `vecs` pixel vectors, the whole reduction k outside it,
outer (channel-block, pixel-block) loops parallel, accumulators written back per tile with the epilogue
(bias, relu, residual add) inlined; the im2col stage gets the default treatment (vectorised along its
pixel rows; parallel when large enough).

Declines: NHWC, depthwise/grouped and 1x1 convolutions (cpu.pointwise_conv's), GPU targets, and where the
measurements below showed no gain: rows the vector divides, short reductions (first layers), few output
channels, large maps.
"""
from __future__ import annotations

import dataclasses
from math import prod
from typing import Any

from leka.ir import CandidateIR, IRApplyError

from ..analysis import BlockInfo, analyze
from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, schedule_rest
from ..sketch import Sketch
from .cpu_conv_register_tile import _sliding, conv_axes, conv_block, single_reduction
from .cpu_multi_gemm import fit
from .cpu_pointwise_conv import finish_gemm_tile

NAME = "cpu.conv_im2col"
# (output channels in the register tile, pixel vectors per tile): accumulators = reg x vecs zmm
KNOBS = ({"reg": 8, "vecs": 2}, {"reg": 4, "vecs": 4}, {"reg": 8, "vecs": 1}, {"reg": 4, "vecs": 2})
# Where it pays (dev figures: 2 threads, min of 5-7 alternating rounds, load 1.7-4.8, against the best
# first variant of cpu.conv_register_tile / cpu.conv_channel_pack): output rows that waste vector lanes
# and a long reduction. SqueezeNet-mini 48->192 3x3 6x6 0.054 vs 0.098 ms, 64->256 6x6 0.078 vs 0.186,
# 32->128 13x13 0.081 vs 0.115, 16->64 27x27 0.107 vs 0.179; IC ResNet-8 64->64 3x3 8x8 0.033 vs 0.058,
# 32->64 3x3 s2 (8x8 out) 0.018 vs 0.045. Losses, declined: rows the vector divides (ResNet-8's 16x16 and
# 32x32 maps, 0.046-0.053 vs 0.031-0.032 ms); short reductions, the first layers (KWS 1->64 10x4, k = 40:
# 0.016 vs 0.0135; SqueezeNet's stem 3->64 3x3 s2 on 55x55, k = 27: 0.28 vs 0.10), where each accumulator
# tile does a few dozen FMAs per write-back; few output channels (suite 5x5 6->16 on a 10x10 output:
# 0.021 vs 0.011 ms), where the im2col copy is shared by too few of them.
MIN_REDUCTION = 64  # ci * kh * kw
MIN_CHANNELS = 32  # output channels
MAX_PIXELS = 1024  # largest win measured: 729 pixels; larger maps make a large im2col buffer (unmeasured)


@dataclasses.dataclass(frozen=True)
class Im2colAxes:
    width: int  # output row length
    pixels: int
    padded: int  # pixels rounded up to a multiple of the vector width (the GEMM's pixel extent)


def im2col_axes(ctx: RuleContext, b: BlockInfo) -> Im2colAxes | None:
    """An NCHW dense convolution with a kh x kw > 1 window, a long reduction, enough output channels and
    rows that waste vector lanes, on a map of at most MAX_PIXELS; None otherwise."""
    axes = conv_axes(ctx, b)
    if axes is None or axes.pad_at_chunk or axes.grouped or len(b.spatial) != 4 or len(b.reduce) != 3:
        return None  # not a dense conv (grouped: the column copy assumes one input-channel range), or NHWC
    if not any(b.extents[i] > 1 for i in b.reduce[1:]):
        return None  # 1x1: the pixels are already a GEMM axis (cpu.pointwise_conv)
    rows, cols = b.spatial[-2], b.spatial[-1]
    pixels, lanes = b.extents[rows] * b.extents[cols], lanes_for(ctx.facts, b.dtype_bits)
    if pixels > MAX_PIXELS or b.extents[cols] % lanes == 0 or b.extents[axes.reg] < MIN_CHANNELS \
            or prod(b.extents[i] for i in b.reduce) < MIN_REDUCTION:
        return None
    return Im2colAxes(b.extents[cols], pixels, -(-pixels // lanes) * lanes)


def rewrite(ctx: RuleContext, b: BlockInfo, width: int, pad_to: int) -> CandidateIR:
    """The algorithm layer: the window read copied into col[n, ci, kh, kw, p] (padding inlined), and the
    convolution and its epilogue iterating over the pixel p = y*W + x instead of (y, x), so that a pixel
    vector is a contiguous load and store (with (y, x) fused only in the schedule, the pixel tile's
    y = p // W, x = p % W indices became gathers and scatters: 0.28 ms against 0.09 for the direct tile)."""
    from ..algorithm.common import as_candidate, fresh_schedule

    cb = conv_block(ctx, b)
    if cb is None:  # unreachable after im2col_axes (conv_axes needs the conv block); kept for direct callers
        raise IRApplyError(f"im2col rewrite: {b.name} is not a conv block")
    sch = fresh_schedule(ctx)
    blk = sch.get_sblock(b.name)
    window = next(r for r in cb.reads if _sliding(r, cb.spatial, cb.reduce)).source.name
    data = next(i for i, r in enumerate(sch.get(blk).reads) if r.source.name == window)
    pix = lambda n, c, y, x: (n, c, y * width + x)  # noqa: E731 - NCHW map -> [n, c, p]
    try:
        col = sch.reindex(blk, ("read", data))
        for p in sch.get_producers(col):
            if sch.get(p).name_hint in {x.name for x in ctx.infos if not x.writes_output}:
                sch.compute_inline(p)
        # reindex orders col's axes as the conv block's iterators (n, y, x, ci, kh, kw)
        sch.transform_layout(col, ("write", 0), lambda n, y, x, c, r, s: (n, c, r, s, y * width + x))
        n, y, x, c, r, s = sch.get_loops(col)
        sch.reorder(n, c, r, s, y, x)  # the copy walks col (and a stride-1 input) along the pixels
        root = sch.get_sblock("root")
        if sch.get(blk).writes[0].source.name not in {a.name for a in sch.get(root).alloc_buffers}:
            sch.reindex(blk, ("write", 0))  # the function's output: an intermediate takes the pixel layout
        sch.transform_layout(blk, ("write", 0), pix)
        sch.transform_block_layout(blk, lambda n, c, y, x, k, r, s: (n, c, y * width + x, k, r, s))
        later = [sch.get(x).name_hint for x in sch.get_child_blocks(root)]
        for ep in map(sch.get_sblock, later[later.index(b.name) + 1:]):  # epilogue: bias, relu, output copy
            if len(sch.get_loops(ep)) == 4:
                sch.transform_block_layout(ep, pix)
        if pad_to > 1:
            _pad_pixels(sch, blk, pad_to)
    except Exception as e:  # noqa: BLE001 - TVM refuses (not the iterator order assumed): not mine
        raise IRApplyError(f"im2col rewrite: {str(e).splitlines()[0][:120]}") from e
    return as_candidate(ctx, sch.mod["main"], NAME, {"im2col": b.name},
                        f"im2col: {b.name}'s window read copied into col[n, ci, kh, kw, y*W+x], pixels as one axis")


def _pad_pixels(sch: Any, blk: Any, pad_to: int) -> None:
    """Compute the convolution on pixels padded to a multiple of `pad_to` (s_tir pad_einsum: col copied
    into a zero-padded buffer, the product written to a padded intermediate, the valid part copied out);
    the copies fold into the im2col stage and the epilogue where TVM can inline them."""
    sch.pad_einsum(blk, [1, 1, pad_to, 1, 1, 1])
    for padded in sch.get_producers(blk):
        for col in sch.get_producers(padded):
            try:
                sch.compute_inline(col)  # im2col straight into the padded buffer
            except Exception:  # noqa: BLE001 - TVM refuses: the extra copy stays
                pass
    for out in sch.get_consumers(blk):
        if sch.get_consumers(out):
            sch.compute_inline(out)  # the valid part read by the epilogue directly


def build_gemm(sk: Sketch, ctx: RuleContext, b: BlockInfo, pixels: int, kn: dict) -> None:
    """Tile the rewritten convolution (iterators n, co, p, ci, kh, kw): reg channels x a pixel tile."""
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    tile = fit(pixels, lanes * kn["vecs"])
    if tile < lanes:
        raise IRApplyError("pixel tile does not fit this map")
    # the rewrite's iterator order; by position, since a unit reduce iterator (one input channel) may be
    # classified as spatial by the analysis
    n, chans, pix, *red = sk.loops(b.name)
    p0, p1 = sk.do("split", loop=pix, factors=[None, tile])
    c0, c1 = sk.do("split", loop=chans, factors=[None, fit(sk.extent(chans), kn["reg"])])
    sk.do("reorder", loops=[n, c0, p0] + red + [c1, p1])
    finish_gemm_tile(sk, ctx, b, [n, c0, p0], red, c1, p1)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = im2col_axes(ctx, main)
    if axes is None:
        return None
    try:
        start = rewrite(ctx, main, axes.width, lanes_for(ctx.facts, main.dtype_bits)
                        if axes.padded != axes.pixels else 1)
    except IRApplyError:
        return None
    infos = analyze(start.apply(), {a.name for a in ctx.task.outputs})
    sub = dataclasses.replace(ctx, base=start, infos=infos)
    conv = sub.info(main.name)
    out = []
    for kn in KNOBS:
        def build(sk: Sketch, kn: dict = kn) -> None:
            # the im2col stages (TVM names them <buffer>_reindex[_reindex|_pad]) and the epilogue stay
            keep = {x.name for x in infos[infos.index(conv):]} | {x.name for x in infos if "_reindex" in x.name}
            inline_intermediates(sk, [x for x in infos if x.name not in keep])
            build_gemm(sk, sub, conv, axes.padded, kn)
            schedule_rest(sk, infos, {conv.name}, lambda x: lanes_for(ctx.facts, x.dtype_bits), ctx.cores,
                          rfactor=False)
        ir = sub.attempt(NAME, dict(kn), build, start=start)
        if ir is not None:
            out.append(ir)
    return out or None
