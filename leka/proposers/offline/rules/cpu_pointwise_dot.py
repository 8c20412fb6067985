"""CPU pointwise (1x1, stride 1) NCHW convolution on a map of few pixels, as dot products along the input channels.

A classifier or squeeze-excite 1x1 convolution on a small map (SqueezeNet's 512->1000 on 3x3 maps, MobileNet's
heads on 2x2) has far more output channels than pixels: cpu.pointwise_conv declines it (the pixels do not fill
a vector), cpu.conv_register_tile vectorises a 3-wide row and reads each weight as a scalar at a 2 KB stride.
Here the weight's rows W[co, ci] are read as vectors along ci, where they are contiguous: the input (small
on such maps) is copied channels-last per call, x[ci, p] -> xt[p, ci], and each output is a dot product of a
weight row with a pixel's column, accumulated in `lanes`-wide partial sums (rfactor) over a register tile of
`reg` output channels x `pix` pixels (every weight vector reused by `pix` pixels, every input vector by `reg`
channels), then summed across the lanes per output with the fused epilogue. Declines anything else: wider
kernels, strided or padded inputs, NHWC, grouped convolutions, input channels the vector width does not divide,
and rows wider than MAX_WIDTH_OF_LANES of a vector (cpu.conv_register_tile and cpu.pointwise_conv tile those).
"""
from __future__ import annotations

from leka.ir import CandidateIR

from ..analysis import BlockInfo
from ..context import RuleContext
from ..cpu_plan import lanes_for
from ..sketch import Sketch
from .cpu_conv_register_tile import read_index, single_reduction, tile_variants
from .cpu_multi_gemm import fit
from .cpu_pointwise_conv import PointwiseAxes, pointwise_axes

NAME = "cpu.pointwise_dot"
# (output channels, pixels) in the register tile: reg x pix partial-sum vectors, at most 18 of the 32 zmm.
# The tile's pixels are whole rows (a tile ending mid-row gets its row's lane sums written back half computed:
# wrong results on 6x6 maps). On 3x3 maps (znver4, 2 threads, experiments/model_kernel_profile.py): SqueezeNet
# 1.1's 512->1000 4 x 3 56 us, 2 x 9 63 us, 1 x 9 82 us, cpu.conv_register_tile's best 147 us; the VWW
# MobileNet's 128->256 and 256->256 4 x 3 7.0 and 10.2 us, ahead of every other rule's candidates
KNOBS = ({"reg": 4, "pix": 4}, {"reg": 2, "pix": 9}, {"reg": 1, "pix": 16})
# rows at most a quarter of a vector wide: on 6x6 maps cpu.conv_register_tile (6 of 16 lanes) ran 2-4x faster
# (SqueezeNet-mini's 48->192, 384->48, 512->100; VWW's 64->128, 128->128)
MAX_WIDTH_OF_LANES = 0.25


def dot_axes(ctx: RuleContext, b: BlockInfo) -> PointwiseAxes | None:
    """The pointwise axes of a 1x1 convolution this rule takes, or None."""
    axes = pointwise_axes(ctx, b, whole_vectors=False)
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    if axes is None or b.extents[axes.cols] > MAX_WIDTH_OF_LANES * lanes or axes.pixels % lanes == 0:
        return None  # the width fills a vector well enough (cpu.conv_register_tile, cpu.pointwise_conv)
    chans_in = b.extents[next(i for i in b.reduce if b.extents[i] > 1)]
    return axes if chans_in % lanes == 0 else None


def build_tile(sk: Sketch, ctx: RuleContext, b: BlockInfo, axes: PointwiseAxes, kn: dict) -> set[str]:
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    blk = sk.live.sch.get(sk.live.block(b.name))
    data = read_index(sk, b.name, blk.iter_vars[axes.cols].var.name, walks=True)
    # the input channels-last ([n, c, y, x] -> [n, y, x, c]), copied once per call before the loop
    copy = sk.mem_do("cache_read", block=b.name, buffer=data, scope="global")[0]
    nd = len(blk.reads[data].region)
    channel_dim = nd - 3
    sk.mem_do("transform_layout", block=copy, access="write", buffer=0,
              permutation=[d for d in range(nd) if d != channel_dim] + [channel_dim])
    loops = sk.loops(b.name)
    red_long = next(i for i in b.reduce if b.extents[i] > 1)
    pixels = sk.do("fuse", loops=[loops[axes.rows], loops[axes.cols]])[0]
    k0, k1 = sk.do("split", loop=loops[red_long], factors=[None, lanes])
    reg, pix = fit(b.extents[axes.channel], kn["reg"]), _pixel_tile(b.extents[axes.rows], b.extents[axes.cols], kn["pix"])
    c0, c1 = sk.do("split", loop=loops[axes.channel], factors=[None, reg])
    p0, p1 = sk.do("split", loop=pixels, factors=[None, pix])
    others = [lp for lp in sk.loops(b.name) if lp not in (c0, c1, p0, p1, k0, k1)]
    sk.do("reorder", loops=[c0, p0] + others + [k0, c1, p1, k1])
    # the loops stay in this order on the partial-sum block; the lane sums get loops of their own
    rf = sk.do("rfactor", loop=k1, factor_axis=len(b.spatial))[0]
    rf_loops = sk.loops(rf)
    outer = sk.do("fuse", loops=rf_loops[:2])[0]
    sk.do("parallel", loop=outer)
    # the lane sums and the epilogue (bias, relu) per tile, while its partial sums are in cache
    sk.do("reverse_compute_at", block=b.name, loop=outer)
    placed = set()
    for ep in ctx.infos[ctx.infos.index(b) + 1:]:
        if not ep.is_reduction and not ep.is_ordered:
            sk.do("reverse_compute_at", block=ep.name, loop=outer)
            placed.add(ep.name)
    rf_loops = sk.loops(rf)
    sk.do("unroll", loop=rf_loops[-3])
    sk.do("unroll", loop=rf_loops[-2])
    sk.do("vectorize", loop=rf_loops[-1])
    sk.do("decompose_reduction", block=rf, loop=sk.loops(rf)[1])  # partial sums zeroed per tile
    return placed


def _pixel_tile(rows: int, width: int, want: int) -> int:
    """Pixels in the tile: whole rows, as many as divide the map's rows and fit `want` pixels (one row at least)."""
    return width * max(d for d in range(1, rows + 1) if rows % d == 0 and (d == 1 or d * width <= want))


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = dot_axes(ctx, main)
    return tile_variants(ctx, main, axes, list(KNOBS), NAME, tile=build_tile) if axes is not None else None
