"""CPU pointwise (1x1, stride 1) NCHW convolution as the GEMM it is: out[co, p] = sum_ci W[co, ci] x[ci, p].

The output's rows and columns (y, x) are one contiguous pixel axis p = y*W + x in both the input and the
output, so they are fused before tiling: the vector runs along p (16 fp32 lanes), not along a short
row (8x8, 16x16 maps) as the generic conv tile must; maps whose pixel count the vector width does not
divide are declined (measured slower than that tile). The register tile is (reg output channels) x
(vecs vectors of pixels), the whole input-channel reduction runs inside it, each input vector is reused
by `reg` channels and each weight is broadcast (fewer channels where whole rows make the tile many
vectors: MAX_ACCUMULATOR_BYTES); the outer (channel-block, pixel-block) loops are parallel, listed first in
the order that re-reads the smaller tensor (knob_order), the accumulator tile is written back
with the fused epilogue (bias, relu, residual add) inlined there. Declines anything else: kernels wider than
1x1, strided or padded inputs (the input's spatial extent differs from the output's), NHWC (there the output
channels are contiguous and cpu.conv_register_tile already vectorises them), depthwise/grouped convolutions.
"""
from __future__ import annotations

from dataclasses import dataclass

from leka.ir import CandidateIR

from ..analysis import BlockInfo, _uses
from ..context import RuleContext
from ..cpu_plan import lanes_for, parallel_outer
from ..sketch import Sketch
from .cpu_conv_register_tile import conv_block, single_reduction, tile_variants
from .cpu_multi_gemm import fit

NAME = "cpu.pointwise_conv"
# (output channels in the tile, pixel vectors per tile row, which outer loop is outermost): 8 x 16 fp32 = 8 zmm
# the accumulator tile (channels x pixel vectors) at most: 8 AVX-512 registers. On 512x128 28x28 (znver4, 2
# threads) the 112-pixel row-aligned tile (7 zmm) with 8 channels ran 10.7 ms (9 GFLOP/s), with 2: 4.7, with 1:
# 2.3; one 16-pixel vector x 8 channels on 16-wide maps ~230 GFLOP/s (experiments/pointwise_order.py). NEON's
# 3 x 8 q-register tiles on 6x6 maps (384 bytes) are as before (not measured here)
MAX_ACCUMULATOR_BYTES = 8 * 64
KNOBS = ({"reg": 8, "vecs": 1, "outer": "channels"}, {"reg": 4, "vecs": 2, "outer": "channels"},
         {"reg": 8, "vecs": 2, "outer": "pixels"}, {"reg": 4, "vecs": 1, "outer": "pixels"})


@dataclass(frozen=True)
class PointwiseAxes:
    channel: int  # loop index of the output-channel loop (register tile)
    rows: int  # loop index of the output rows (fused with `cols` into the pixel axis)
    cols: int  # loop index of the innermost output loop (contiguous)
    pixels: int  # rows x cols extent


def _shape(buf) -> tuple[int, ...]:
    return tuple(int(d) for d in buf.shape)


def pointwise_axes(ctx: RuleContext, b: BlockInfo, whole_vectors: bool = True) -> PointwiseAxes | None:
    """Channel, row and column loops of a 1x1 stride-1 NCHW convolution block, or None (also when its pixels
    do not fill whole vectors, unless `whole_vectors` is False)."""
    cb = conv_block(ctx, b)
    long_red = [i for i in b.reduce if b.extents[i] > 1]
    if cb is None or len(long_red) != 1:
        return None  # not conv-like, or a 3x3 window (or no channel reduction at all)
    names, reads = cb.names, cb.reads
    rc = names[long_red[0]]
    rows, cols = b.spatial[-2], b.spatial[-1]

    def walks(reg, var: str) -> bool:
        return any(_uses(r.min, var) for r in reg.region)

    data = [r for r in reads if walks(r, names[cols]) and walks(r, names[rows])]
    weight = [r for r in reads if not walks(r, names[cols]) and not walks(r, names[rows])]
    if len(data) != 1 or len(weight) != 1 or not walks(data[0], rc) or not walks(weight[0], rc):
        return None
    chans = [i for i in b.spatial[:-2] if walks(weight[0], names[i]) and not walks(data[0], names[i])]
    if not chans:
        return None  # depthwise: every output channel reads its own input channel
    if _shape(data[0].source)[-2:] != cb.out_shape[-2:]:
        return None  # strided or padded: the pixels of input and output are not the same axis
    pixels = b.extents[rows] * b.extents[cols]
    if whole_vectors and pixels % lanes_for(ctx.facts, b.dtype_bits):
        # KWS's 25x5 map (125 pixels) as 25-wide vectors: 0.077 ms against cpu.conv_register_tile's 5-wide
        # rows x 8 channels 0.019 ms (one thread, min of 15 alternating rounds): left to that rule. SqueezeNet's
        # 6x6 maps as one 36-wide vector: 0.19-1.1 ms against that rule's 0.02-0.14 ms (load ~4)
        return None
    return PointwiseAxes(chans[-1], rows, cols, pixels)


def row_aligned_tile(axes: PointwiseAxes, width: int, want: int) -> int:
    """Pixels per tile: whole rows or a whole fraction of one. The tile's write-back covers the rows its
    pixels touch, so a tile ending mid-row (16 pixels of VWW's 12- and 24-wide maps) wrote rows partly
    computed and the results were wrong (1730 of 9216 elements on the 12x12 64->64 conv); there the tile
    is the least common multiple of the row and the vector (48 pixels), else the variant is dropped."""
    from math import lcm

    from leka.ir import IRApplyError

    tile = fit(axes.pixels, want)
    if tile % width == 0 or width % tile == 0:
        return tile
    tile = lcm(tile, width)
    if axes.pixels % tile or tile > 4 * want:
        raise IRApplyError(f"no row-aligned pixel tile near {want} for {width}-wide rows")
    return tile


def build_tile(sk: Sketch, ctx: RuleContext, b: BlockInfo, axes: PointwiseAxes, kn: dict) -> None:
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    loops = sk.loops(b.name)
    pix = sk.do("fuse", loops=[loops[axes.rows], loops[axes.cols]])[0]
    tile = row_aligned_tile(axes, b.extents[axes.cols], lanes * kn["vecs"])
    p0, p1 = sk.do("split", loop=pix, factors=[None, tile])
    # a row-aligned tile can be many vectors (28- and 56-wide rows: 112 pixels, 7 vectors): fewer channels then
    fits = MAX_ACCUMULATOR_BYTES // (-(-tile // lanes) * lanes * b.dtype_bits // 8)
    reg = min(kn["reg"], 1 << max(0, fits.bit_length() - 1))  # a power of two: `fit` halves to a divisor
    c0, c1 = sk.do("split", loop=loops[axes.channel], factors=[None, fit(b.extents[axes.channel], reg)])
    others = [loops[i] for i in b.spatial if i not in (axes.channel, axes.rows, axes.cols)]
    red = [loops[i] for i in b.reduce]
    outer = others + ([c0, p0] if kn["outer"] == "channels" else [p0, c0])
    sk.do("reorder", loops=outer + red + [c1, p1])
    finish_gemm_tile(sk, ctx, b, outer, red, c1, p1)


def finish_gemm_tile(sk: Sketch, ctx: RuleContext, b: BlockInfo, outer: list[str], red: list[str], reg: str,
                     vec: str) -> None:
    """The channel x pixel tile, loops already ordered outer + red + [reg, vec]: outer loops parallel, the
    accumulator tile written back per tile with the elementwise epilogue inlined there, `reg` unrolled,
    `vec` vectorised, the init split off (also cpu.conv_im2col's GEMM tile)."""
    parallel_outer(sk, outer, ctx.cores)
    tile_at = sk.loops(b.name)[len(sk.loops(b.name)) - len(red) - 3]  # the last outer loop
    cw = sk.mem_do("cache_write", block=b.name, buffer=0, scope="global", at=tile_at)[0]
    for ep in ctx.infos[ctx.infos.index(b) + 1:]:
        if not ep.is_reduction and not ep.is_ordered:
            sk.try_do("reverse_compute_inline", block=ep.name)
    cw_loops = sk.loops(cw)
    if sk.extent(cw_loops[-1]) >= 4:
        sk.do("vectorize", loop=cw_loops[-1])
    sk.do("unroll", loop=reg)
    sk.do("vectorize", loop=vec)
    first_red = next(lp for lp in sk.loops(b.name) if lp in red)
    sk.do("decompose_reduction", block=b.name, loop=first_red)


def knob_order(axes: PointwiseAxes, b: BlockInfo) -> list[dict]:
    """KNOBS, the loop order that re-reads the smaller tensor first (what the quick pass and a search's first
    step take). Channels outermost, every channel block streams the whole input (in_channels x pixels); pixels
    outermost, every pixel block streams the whole weight (out_channels x in_channels): ResNet-50's 512->128
    1x1 on 28x28 (a 1.6 MB input, a 256 KB weight) ran 11 ms channels-outer, 9 GFLOP/s
    (experiments/pointwise_order.py)."""
    pixels_first = axes.pixels > b.extents[axes.channel]  # input (ci x pixels) larger than weight (co x ci)
    return sorted(KNOBS, key=lambda kn: (kn["outer"] == "pixels") != pixels_first)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = pointwise_axes(ctx, main)
    return tile_variants(ctx, main, axes, knob_order(axes, main), NAME, tile=build_tile) if axes is not None else None
