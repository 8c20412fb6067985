"""CPU functions with several GEMM-like reductions (attention: Q @ K^T, softmax, P @ V; two-layer MLPs):
every reduction that reuses an operand across outputs is tiled like a GEMM (its transposed operand packed
first when needed), the row reductions and elementwise stages between them get the default treatment.
The single-reduction rules (cpu.tile_reduction, cpu.pack_transposed) decline such functions."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..analysis import analyze
from ..context import RuleContext
from ..cpu_plan import (inline_intermediates, lanes_for, pack_transposed_operands, schedule_rest, schedule_spatial,
                        tile_reduction)

NAME = "cpu.multi_gemm"
TILES = ({"ti": 8, "tj": 32, "tk": 4}, {"ti": 8, "tj": 16, "tk": 4}, {"ti": 4, "tj": 32, "tk": 8})


def fit(extent: int, want: int) -> int:
    """The largest of want, want/2, ... that divides the extent (1 at worst)."""
    while want > 1 and extent % want:
        want //= 2
    return max(1, want)


def gemm_like(b) -> bool:
    return (b.is_reduction and not b.is_ordered and b.reuse and len(b.spatial) >= 1
            and (b.inner_contiguous or (len(b.spatial) >= 2 and b.reduce_contiguous and b.kinds[-1] == "R")))


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    gemms = [b for b in ctx.infos if gemm_like(b)]
    if len(gemms) < 2:
        return None
    outputs = {a.name for a in ctx.task.outputs}

    def lanes(b):
        return lanes_for(ctx.facts, b.dtype_bits)

    out = []
    for kn in TILES:
        for rfactor in (False, True):
            def build(sk, kn=kn, rfactor=rfactor):
                done = set(inline_intermediates(sk, ctx.infos))
                for g in gemms:
                    info, packed = (g, []) if g.inner_contiguous else pack_transposed_operands(sk, g, outputs)
                    sp = [info.extents[i] for i in info.spatial]
                    ti = fit(sp[-2], kn["ti"]) if len(sp) > 1 else 1
                    tile_reduction(sk, info, lanes(info), ctx.cores, ti, fit(sp[-1], kn["tj"]), kn["tk"], True, [])
                    for p in packed:
                        schedule_spatial(sk, next(b for b in analyze(sk.live, outputs) if b.name == p),
                                         lanes(info), ctx.cores)
                schedule_rest(sk, ctx.infos, done | {g.name for g in gemms}, lanes, ctx.cores, rfactor=rfactor)
            ir = ctx.attempt(NAME, {**kn, "rfactor": rfactor}, build)
            if ir is not None:
                out.append(ir)
    return out or None
