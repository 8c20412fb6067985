"""CPU direct convolution with a register tile (NCHW, NHWC, strided, fused conv+bias+relu).

The output's contiguous loop (channels in NHWC, width in NCHW) is split by the vector width and
vectorised; a second spatial loop is split by 4-8 and unrolled so that a tile of
(reg x vector) accumulators stays in registers while the whole reduction (input channels x kh x kw)
runs outside it. Each input value then feeds `vector` outputs and each vector of weights `reg`
outputs. The second loop is chosen for operand reuse:
- vector axis not read by the input (NHWC output channels): the innermost input-walking loop (width);
  a weight vector is reused across `reg` output pixels, an input scalar broadcast across channels;
- vector axis read by the input (NCHW width): the output channel (reads no input): one input vector
  reused across `reg` channels, weights broadcast. Depthwise convolution is declined (measured loss); a
  grouped one is taken (its input channel moves only from one group to the next).
The outer loops are parallelised, the accumulator tile is written back per tile (epilogues such as
bias + relu inlined into that write-back), the padding stage is computed per parallel chunk or left
to the default treatment. A rule of its own because cpu.tile_reduction tiles the two innermost
spatial loops, which for NCHW are rows x width: no reuse of the input across output channels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from leka.ir import CandidateIR

from ..analysis import BlockInfo, _uses, uses_outside_groups
from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, parallel_outer, schedule_rest
from ..sketch import Sketch
from .cpu_multi_gemm import fit

NAME = "cpu.conv_register_tile"
# (register tile, vectors per row of the tile, padding placement): 8 x 16 fp32 = 8 zmm accumulators
# (inlining the padding puts a branch in the tile: 0.6x on NCHW 3x3, so it is not a variant)
KNOBS = ({"reg": 8, "vecs": 1, "pad": "root"}, {"reg": 4, "vecs": 2, "pad": "at"}, {"reg": 8, "vecs": 1, "pad": "at"},
         {"reg": 4, "vecs": 1, "pad": "root"}, {"reg": 4, "vecs": 2, "pad": "root"})


@dataclass(frozen=True)
class ConvAxes:
    vec: int  # loop index of the vectorised (output-contiguous) axis
    reg: int  # loop index of the unrolled register-tile axis
    # NHWC: the parallel outer loops (batch, rows) each read their own input rows, so the padding can be
    # computed per parallel chunk; in NCHW they run over output channels, and every chunk would pad the
    # whole input again (measured 0.05 -> 0.9 ms on a 3x3 s2 conv), so there it stays a separate stage
    pad_at_chunk: bool = False
    # a grouped convolution: the input channel is read as (co // per_group) * ci_per_group + rc, so a tile of
    # output channels inside one group reuses the same input (AlexNet's conv2/4/5; rules that rewrite the
    # input's layout, cpu.conv_im2col, decline it)
    grouped: bool = False


def _sliding(reg, spatial_vars: list[str], reduce_vars: list[str]) -> bool:
    """Some index of the read combines a spatial and a reduce iterator (y + ry): a sliding window."""
    return any(any(_uses(r.min, s) for s in spatial_vars) and any(_uses(r.min, k) for k in reduce_vars)
               for r in reg.region)


@dataclass(frozen=True)
class ConvBlock:
    names: list[str]  # the block's iterator names, in loop order
    spatial: list[str]
    reduce: list[str]
    reads: list[Any]  # the two buffer regions it reads (input and weight), as TVM's BufferRegions
    out_shape: tuple[int, ...]


def conv_block(ctx: RuleContext, b: BlockInfo) -> ConvBlock | None:
    """The iterators and the two reads of a conv-like block (a commutative reduction with a contiguous
    innermost spatial loop, >= 3 spatial loops, two inputs), or None: what the conv rules inspect."""
    if not (b.is_reduction and not b.is_ordered and b.inner_contiguous and len(b.spatial) >= 3
            and len(b.loops) == len(b.kinds)):
        return None
    sk = Sketch(ctx.base)
    blk = sk.live.sch.get(sk.live.block(b.name))
    names = [iv.var.name for iv in blk.iter_vars]
    out = blk.writes[0].source
    reads = [r for r in blk.reads if r.source.name != out.name]
    if len(reads) != 2:
        return None
    return ConvBlock(names, [names[i] for i in b.spatial], [names[i] for i in b.reduce], reads,
                     tuple(int(d) for d in out.shape))


def read_index(sk: Sketch, block: str, var: str, walks: bool) -> int:
    """Index (in the block's reads, its output excluded) of the read whose indices use iterator `var` (walks=True:
    the input map, given a spatial iterator of the output) or do not (walks=False: the weight)."""
    blk = sk.live.sch.get(sk.live.block(block))
    out = blk.writes[0].source.name
    return next(i for i, r in enumerate(blk.reads)
                if r.source.name != out and any(_uses(x.min, var) for x in r.region) == walks)


def conv_axes(ctx: RuleContext, b: BlockInfo) -> ConvAxes | None:
    """The vector and register axes of a conv-like block, or None when it is not one: a commutative
    reduction with a contiguous innermost spatial loop, one input read as a sliding window (or, for
    1x1 kernels, the read walking most spatial iterators) and one weight read."""
    cb = conv_block(ctx, b)
    if cb is None:
        return None
    names, sp, rd, reads = cb.names, cb.spatial, cb.reduce, cb.reads

    def walked(reg) -> set[str]:
        return {s for s in sp if any(_uses(r.min, s) for r in reg.region)}

    windows = [r for r in reads if _sliding(r, sp, rd)]
    if len(windows) > 1:
        return None
    data = windows[0] if windows else max(reads, key=lambda r: len(walked(r)))
    weight = next(r for r in reads if r is not data)
    if len(walked(data)) < (2 if windows else 3) or not any(_uses(r.min, k) for r in weight.region for k in rd):
        return None
    vec = b.spatial[-1]
    on_weight = walked(weight)
    on_data = {v for v in walked(data) if any(uses_outside_groups(r.min, v) for r in data.region)}
    grouped = on_data != walked(data)
    if not on_weight - on_data:
        # depthwise (every output channel reads its own input channel): measured 0.4-0.6x against the
        # naive lowering (LLVM vectorises that short loop nest well; threads cost more), so declined
        return None
    big = [i for i in b.spatial if i != vec and b.extents[i] > 1]
    if names[vec] not in on_data:  # NHWC: output channels vectorised, pixels in the register tile
        pick = [i for i in big if names[i] in on_data]
    else:  # NCHW: width vectorised, output channels in the tile
        pick = [i for i in big if names[i] in on_weight and names[i] not in on_data]
    return ConvAxes(vec, pick[-1], names[vec] not in on_data, grouped) if pick else None


def _place_padding(sk: Sketch, ctx: RuleContext, anchor: str | None, how: str) -> set[str]:
    """Spatial producers with a border condition (padding): inlined, computed per parallel chunk, or
    left to the default treatment (how == "root")."""
    done = set()
    for p in (x for x in ctx.infos if x.has_condition and not x.is_reduction and not x.writes_output):
        if how == "inline" and sk.try_do("compute_inline", block=p.name) is not None:
            done.add(p.name)
        elif how == "at" and anchor is not None and sk.try_do("compute_at", block=p.name, loop=anchor) is not None:
            loops = sk.loops(p.name)
            if loops and sk.extent(loops[-1]) >= 4:
                sk.try_do("vectorize", loop=loops[-1])
            done.add(p.name)
    return done


def build_tile(sk: Sketch, ctx: RuleContext, b: BlockInfo, axes: ConvAxes, kn: dict) -> set[str]:
    """Tile, reorder, parallelise, accumulate per tile, vectorise; returns the padding blocks placed."""
    lanes = lanes_for(ctx.facts, b.dtype_bits)
    loops = sk.loops(b.name)
    sp = [loops[i] for i in b.spatial]
    rd = [loops[i] for i in b.reduce]
    v_ext, r_ext = b.extents[axes.vec], b.extents[axes.reg]
    vw = min(v_ext, lanes * kn["vecs"])
    if v_ext % vw:
        # odd widths (27, 13 in SqueezeNet): the whole row as one vector (LLVM splits it into legal
        # vectors) beats the scalar loop that a divisor of 1 would leave
        vw = v_ext if v_ext <= 2 * lanes else fit(v_ext, lanes)
    v0, v1 = sk.do("split", loop=loops[axes.vec], factors=[None, vw])
    r0, r1 = sk.do("split", loop=loops[axes.reg], factors=[None, fit(r_ext, kn["reg"])])
    outer = [lp if lp not in (loops[axes.vec], loops[axes.reg]) else (v0 if lp == loops[axes.vec] else r0)
             for lp in sp]
    sk.do("reorder", loops=outer + rd + [r1, v1])
    fused = parallel_outer(sk, outer, ctx.cores)
    tile_at = sk.loops(b.name)[len(sk.loops(b.name)) - len(rd) - 3]  # the last outer loop
    cw = sk.mem_do("cache_write", block=b.name, buffer=0, scope="global", at=tile_at)[0]
    out_idx = ctx.infos.index(b)
    for ep in ctx.infos[out_idx + 1:]:
        if not ep.is_reduction and not ep.is_ordered:
            sk.try_do("reverse_compute_inline", block=ep.name)
    cw_loops = sk.loops(cw)
    if sk.extent(cw_loops[-1]) >= 4:
        sk.do("vectorize", loop=cw_loops[-1])
    placed = _place_padding(sk, ctx, fused, kn["pad"])
    sk.do("unroll", loop=r1)
    if sk.extent(v1) >= 2:
        sk.do("vectorize", loop=v1)
    first_red = next(lp for lp in sk.loops(b.name) if lp in rd)
    sk.do("decompose_reduction", block=b.name, loop=first_red)
    return placed


def single_reduction(ctx: RuleContext) -> BlockInfo | None:
    """The one reduction block of a CPU kernel (the conv rules' anchor), or None."""
    mains = [b for b in ctx.infos if b.is_reduction]
    return mains[0] if ctx.family == "cpu" and len(mains) == 1 else None


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    main = single_reduction(ctx)
    if main is None:
        return None
    axes = conv_axes(ctx, main)
    if axes is None:
        return None
    return tile_variants(ctx, main, axes, [k for k in KNOBS if k["pad"] != "at" or axes.pad_at_chunk], NAME)


def tile_variants(ctx: RuleContext, main: BlockInfo, axes: Any, knobs: list[dict], rule: str,
                  tile: Callable[..., set[str] | None] = build_tile) -> list[CandidateIR] | None:
    """One candidate per knob set: intermediates inlined, `tile(sk, ctx, main, axes, knobs)` (returns the
    padding blocks it placed), the rest default-treated."""
    out = []
    for kn in knobs:
        def build(sk, kn=kn):
            keep = {p.name for p in ctx.infos if p.has_condition} | \
                {e.name for e in ctx.infos[ctx.infos.index(main) + 1:]}
            done = set(inline_intermediates(sk, [x for x in ctx.infos if x.name not in keep]))
            done |= tile(sk, ctx, main, axes, kn) or set()
            alive = set(sk.live.block_names())
            schedule_rest(sk, ctx.infos, done | {main.name} | (keep - alive),
                          lambda x: lanes_for(ctx.facts, x.dtype_bits), ctx.cores, rfactor=False)
        ir = ctx.attempt(rule, dict(kn), build)
        if ir is not None:
            out.append(ir)
    return out or None
