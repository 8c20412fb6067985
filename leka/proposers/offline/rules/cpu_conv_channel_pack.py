"""CPU NCHW convolution vectorised along the output channels, with the weights packed per channel block.

cpu.conv_register_tile vectorises an NCHW convolution along the output width. On the narrow maps of small
CNNs (SqueezeNet's 27/13/6-wide rows, MobileNet's 24/12/6/3, KWS's 5) a row fills 6-13 of 16 fp32 lanes,
so most of each FMA is wasted. Here the vector runs along `lanes` output channels instead (an NCHWc
block, as ONNX Runtime's NCHWc convolutions do): each input value is broadcast to a vector of channels and
every lane is useful whatever the width. The weights W[co, ci, kh, kw] read along co would be a gather, so
each channel block's weights are first copied into a [ci, kh, kw, co] buffer (cache_read at the channel
block's loop + transform_layout), once per block (all at once before the loop when the channel blocks alone
are too few to share between threads): that copy reads the weight tensor once, while the convolution reads
each weight once per output pixel. The all-at-once copy is marked a layout rewrite of the weight: in a model
it runs once at build time on the constant weights (leka/optimize/prepack.py); the per-block copy cannot be
split out of the loop it shares with the convolution and stays per call. The register tile is
(rows x pixels of a row) x (vecs vectors of channels); the whole
reduction (ci x kh x kw) runs outside it; the accumulator tile is written back per tile with the fused
epilogue (bias, relu) inlined there; the padding stage stays a separate stage.

Declines (not mine): NHWC (cpu.conv_register_tile already vectorises its channels), depthwise convolutions,
output widths the vector width divides (the width vector is full there), channel counts the vector width
does not divide, GPU targets.
"""
from __future__ import annotations

from leka.ir import CandidateIR, IRApplyError

from ..analysis import BlockInfo
from ..context import RuleContext
from ..prepack_mark import mark_weight_prepack
from ..cpu_plan import lanes_for
from ..sketch import Sketch
from .cpu_conv_register_tile import ConvAxes, conv_axes, read_index, single_reduction, tile_variants
from .cpu_multi_gemm import fit

NAME = "cpu.conv_channel_pack"
# (pixels of a row in the tile (at most), rows in the tile, channel vectors): accumulators = pixels x rows x vecs
# zmm registers, at most ~24 of the 32 (the rest hold the weight vectors and the broadcast input)
KNOBS = ({"reg": 14, "rows": 1, "vecs": 1}, {"reg": 6, "rows": 2, "vecs": 1}, {"reg": 7, "rows": 1, "vecs": 2},
         {"reg": 4, "rows": 1, "vecs": 2})
# below this many output pixels the per-block weight copy costs about as much as the convolution itself
# (SqueezeNet's 6x6 3x3 convs, 48->192 and 64->256: 0.39-0.44 ms against cpu.conv_register_tile's
# 0.17-0.27 ms; its 27x27 16->64 conv: 0.17 ms against the best other rule's 0.40 ms; load ~4)
MIN_PIXELS = 100


def _largest_divisor(extent: int, at_most: int) -> int:
    return max(d for d in range(1, min(extent, at_most) + 1) if extent % d == 0)


def channel_axes(ctx: RuleContext, b: BlockInfo) -> ConvAxes | None:
    """NCHW dense convolution whose output width wastes vector lanes: vec = the output-channel loop,
    reg = the width loop; None otherwise."""
    axes = conv_axes(ctx, b)
    if axes is None or axes.pad_at_chunk:
        return None  # not a dense convolution, or NHWC (channels already contiguous)
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    width, chans = b.extents[axes.vec], b.extents[axes.reg]
    if width % lanes == 0 or chans % lanes or b.spatial[-2] == axes.reg:
        return None
    if width * b.extents[b.spatial[-2]] < MIN_PIXELS:
        return None
    return ConvAxes(vec=axes.reg, reg=axes.vec)


def build_tile(sk: Sketch, ctx: RuleContext, b: BlockInfo, axes: ConvAxes, kn: dict) -> set[str] | None:
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    chans, width = b.extents[axes.vec], b.extents[axes.reg]
    rows_i = b.spatial[-2]
    cw_ = lanes * kn["vecs"]
    px, rw = _largest_divisor(width, kn["reg"]), fit(b.extents[rows_i], kn["rows"])
    # a prime width (ZFNet's 109) has no divisor to tile by: the full tile and a predicated partial last one
    # (ZFNet's 7x7 stem 1.9 ms against 8.5 for the best other rule). Only there: SqueezeNet's 111 = 3 x 37
    # measured 0.38 ms tiled by 3 against 0.41-0.44 with 14 and a tail (the predicate sits in the hot loop).
    tail = px < 3 < width
    if tail:
        px = min(width, kn["reg"])
    if chans % cw_ or (px < 3 and px != width):
        raise IRApplyError("tile does not fit this convolution")
    blk = sk.live.sch.get(sk.live.block(b.name))
    w_idx = read_index(sk, b.name, blk.iter_vars[axes.reg].var.name, walks=False)
    loops = sk.loops(b.name)
    c0, c1 = sk.do("split", loop=loops[axes.vec], factors=[None, cw_])
    y0, y1 = sk.do("split", loop=loops[rows_i], factors=[None, rw])
    x0, x1 = sk.do("split", loop=loops[axes.reg], factors=[None, px], **({"tail": True} if tail else {}))

    others = [loops[i] for i in b.spatial if i not in (axes.vec, axes.reg, rows_i)]
    red = [loops[i] for i in b.reduce]
    sk.do("reorder", loops=others + [c0, y0, x0] + red + [y1, x1, c1])
    # channel blocks in parallel, each packing its own weights; with fewer blocks than 2 per core the row
    # blocks join them and the weights are packed once before the loop (packed per row block instead, the
    # copy cost more than the 13x13 1x1 convolutions: 256->32 0.26 ms against cpu.conv_register_tile's 0.06)
    per_block = (chans // cw_) >= 2 * ctx.cores
    take = others + [c0] if per_block else others + [c0, y0]
    outer = sk.do("fuse", loops=take)[0] if len(take) > 1 else take[0]
    sk.do("parallel", loop=outer)
    pack = sk.mem_do("cache_read", block=b.name, buffer=w_idx, scope="global", at=outer if per_block else None)[0]
    nd = len(blk.reads[w_idx].region)
    sk.mem_do("transform_layout", block=pack, access="write", buffer=0, permutation=list(range(1, nd)) + [0])
    if not per_block:  # packed once before the loop: in a model, once at build time (leka/optimize/prepack.py)
        mark_weight_prepack(sk, pack)
    tile_at = sk.loops(b.name)[len(sk.loops(b.name)) - len(red) - 4]  # the last outer loop (x0)
    sk.mem_do("cache_write", block=b.name, buffer=0, scope="global", at=tile_at)
    # the tile's accumulators with the channels innermost: left in the output's NCHW order each channel
    # vector is a strided scatter in the reduction loop (measured: 2 channel vectors 10.4 ms against 0.61)
    nd_out = len(blk.writes[0].region)
    sk.mem_do("transform_layout", block=b.name, access="write", buffer=0,
              permutation=[i for i in range(nd_out) if i != axes.vec] + [axes.vec])
    for ep in ctx.infos[ctx.infos.index(b) + 1:]:
        if not ep.is_reduction and not ep.is_ordered:
            sk.try_do("reverse_compute_inline", block=ep.name)
    if rw > 1:
        sk.do("unroll", loop=y1)
    sk.do("unroll", loop=x1)
    sk.do("vectorize", loop=c1)
    first_red = next(lp for lp in sk.loops(b.name) if lp in red)
    sk.do("decompose_reduction", block=b.name, loop=first_red)
    return set()


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = channel_axes(ctx, main)
    return tile_variants(ctx, main, axes, list(KNOBS), NAME, tile=build_tile) if axes is not None else None
