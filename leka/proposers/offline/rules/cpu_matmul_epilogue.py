"""CPU GEMMs with an elementwise epilogue, batched or with a transposed operand (a transformer's linears,
Q @ K^T / sqrt(d), P @ V, the feed-forward GEMM with its Erf-GELU, the output projection with its residual
add): the one GEMM-like reduction is tiled for registers and cache (batch dims and row tiles fused into the
parallel loop, a transposed operand packed first), accumulated in a cache_write tile, and the whole
elementwise epilogue (bias, scale, GELU, residual add) is folded into the tile's vectorised write-back.
An epilogue calling erf/exp/tanh (libm calls LLVM keeps scalar) is written out as fast-math polynomials
first (alg.fast_math's rewrite as the start), so the write-back vectorises; the exact variants follow.
Declines kernels without an epilogue (cpu.tile_reduction's) and those with a reduction after the GEMM."""
from __future__ import annotations

from leka.evaluator.script_limits import ScriptRejected
from leka.ir import CandidateIR

from ..algorithm import fast_math
from ..analysis import analyze
from ..context import RuleContext
from ..cpu_plan import (inline_intermediates, lanes_for, pack_transposed_operands, schedule_rest, schedule_spatial,
                        tile_reduction)
from .cpu_multi_gemm import fit, gemm_like

NAME = "cpu.matmul_epilogue"
TILES = ({"ti": 8, "tj": 32, "tk": 4}, {"ti": 4, "tj": 32, "tk": 8}, {"ti": 8, "tj": 16, "tk": 4})


def fast_start(ctx: RuleContext) -> CandidateIR | None:
    """alg.fast_math's rewrite of the kernel (a start for the schedule), None when it has nothing to replace."""
    try:
        fast = fast_math.apply(ctx) or []
    except ScriptRejected:
        return None
    return fast[0] if fast else None


def _starts(ctx: RuleContext, main_index: int) -> list[tuple[bool, CandidateIR | None]]:
    """(fast math?, start IR): the polynomial rewrite first when the epilogue calls a transcendental."""
    fast = fast_start(ctx) if any(b.transcendental for b in ctx.infos[main_index + 1:]) else None
    return ([(True, fast)] if fast is not None else []) + [(False, None)]


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    gemms = [b for b in ctx.infos if gemm_like(b)]
    if len(gemms) != 1:
        return None
    main = gemms[0]
    at = ctx.infos.index(main)
    after = ctx.infos[at + 1:]
    if not after or any(b.is_reduction or b.is_ordered for b in after) or not after[-1].writes_output:
        return None
    epilogues = [b.name for b in after]
    outputs = {a.name for a in ctx.task.outputs}
    lanes = lanes_for(ctx.facts, main.dtype_bits)
    out = []
    for fast, start in _starts(ctx, at):
        for kn in TILES:
            def build(sk, kn=kn):
                done = set(inline_intermediates(sk, [b for b in ctx.infos if b.name not in epilogues]))
                info, packed = (main, []) if main.inner_contiguous else pack_transposed_operands(sk, main, outputs)
                sp = [info.extents[i] for i in info.spatial]
                ti = fit(sp[-2], kn["ti"]) if len(sp) > 1 else 1
                tile_reduction(sk, info, lanes, ctx.cores, ti, fit(sp[-1], kn["tj"]), kn["tk"], True, epilogues)
                for p in packed:
                    schedule_spatial(sk, next(b for b in analyze(sk.live, outputs) if b.name == p), lanes, ctx.cores)
                # epilogue stages TVM would not fold (a broadcast it cannot inline) get the default treatment
                schedule_rest(sk, ctx.infos, done | {main.name}, lambda b: lanes_for(ctx.facts, b.dtype_bits),
                              ctx.cores, rfactor=False)
            ir = ctx.attempt(NAME, {**kn, "fast_math": fast}, build, start=start)
            if ir is not None:
                out.append(ir)
    return out or None
