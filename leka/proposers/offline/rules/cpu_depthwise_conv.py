"""CPU depthwise convolution (every output channel reads only its own input channel), NCHW and NHWC.

The register tile of cpu.conv_register_tile, with the axes a depthwise window offers: the output's
contiguous loop vectorised (NCHW: width; NHWC: channels), the tile's second loop over output rows
(NCHW) or pixels of a row (NHWC) unrolled, so each broadcast weight feeds reg x vector outputs and
neighbouring output rows share input rows in registers; the short window (kh x kw) runs outside the
tile. The outer loops (batch, channels in NCHW; rows in NHWC) are parallel and the padded input is
computed per parallel chunk (one channel's padded plane, hot in L1 while its outputs are computed)
or left as a separate stage. cpu.conv_register_tile declines these kernels because its second loop
must read no input (output channels), which a depthwise kernel does not have.
Declines everything else: dense or grouped convolutions with more than one input channel per group
(the channel reduction is then longer than 1), non-window reductions, GPU targets.
"""
from __future__ import annotations

from leka.ir import CandidateIR

from ..analysis import BlockInfo, _uses
from ..context import RuleContext
from .cpu_conv_register_tile import ConvAxes, _sliding, conv_block, single_reduction, tile_variants

NAME = "cpu.depthwise_conv"
# (register tile, vectors per tile row, padding placement)
KNOBS = ({"reg": 4, "vecs": 1, "pad": "at"}, {"reg": 2, "vecs": 2, "pad": "at"}, {"reg": 8, "vecs": 1, "pad": "at"},
         {"reg": 4, "vecs": 1, "pad": "root"})


def depthwise_axes(ctx: RuleContext, b: BlockInfo) -> ConvAxes | None:
    """Vector and register-tile axes of a depthwise convolution block, or None when it is not one."""
    cb = conv_block(ctx, b)
    if cb is None or sum(b.extents[i] > 1 for i in b.reduce) > 2:
        return None  # (a channel reduction besides the window: dense or grouped, not depthwise)
    names, sp, rd, reads = cb.names, cb.spatial, cb.reduce, cb.reads
    windows = [r for r in reads if _sliding(r, sp, rd)]
    if len(windows) != 1:
        return None
    data, weight = windows[0], next(r for r in reads if r is not windows[0])

    def walked(reg) -> set[str]:
        return {s for s in sp if any(_uses(r.min, s) for r in reg.region)}

    on_data, on_weight = walked(data), walked(weight)
    channels = on_weight & on_data
    if not channels or on_weight - on_data:
        return None  # a weight indexed by an output axis the input ignores: dense output channels
    vec = b.spatial[-1]
    pick = [i for i in b.spatial if i != vec and b.extents[i] > 1 and names[i] in on_data and
            names[i] not in channels]
    if not pick:
        return None
    # NCHW: the tile runs over output rows (the loop before width); NHWC: over the pixels of a row
    return ConvAxes(vec, pick[-1], pad_at_chunk=True)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = depthwise_axes(ctx, main)
    return tile_variants(ctx, main, axes, list(KNOBS), NAME) if axes is not None else None
