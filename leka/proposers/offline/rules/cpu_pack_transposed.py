"""CPU reductions whose output's innermost spatial loop walks an operand along a non-last axis
(x @ W^T, Q @ K^T): a memory-layer decision packs that operand transposed once (cache_read at the
root + transform_layout swapping its last two axes), after which the reduction tiles and vectorises
like a GEMM (cpu.tile_reduction's schedule)."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..analysis import analyze
from ..context import RuleContext
from ..cpu_plan import (inline_intermediates, lanes_for, pack_transposed_operands, schedule_rest, schedule_spatial,
                        tile_reduction)

NAME = "cpu.pack_transposed"
TILES = ({"ti": 8, "tj": 32, "tk": 4}, {"ti": 4, "tj": 32, "tk": 8}, {"ti": 8, "tj": 16, "tk": 4})


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    mains = [b for b in ctx.infos if b.is_reduction and not b.is_ordered and len(b.spatial) >= 2 and not b.inner_contiguous
             and b.reduce_contiguous and b.kinds[-1] == "R" and b.reuse]
    if len(mains) != 1:
        return None
    main = mains[0]
    outputs = {a.name for a in ctx.task.outputs}
    lanes = lanes_for(ctx.facts, main.dtype_bits)
    out = []
    for kn in TILES:
        def build(sk, kn=kn):
            done = set(inline_intermediates(sk, ctx.infos))
            info, packed = pack_transposed_operands(sk, main, outputs)
            tile_reduction(sk, info, lanes, ctx.cores, kn["ti"], kn["tj"], kn["tk"], True, [])
            for p in packed:
                schedule_spatial(sk, next(b for b in analyze(sk.live, outputs) if b.name == p), lanes, ctx.cores)
            schedule_rest(sk, ctx.infos, done | {main.name}, lambda b: lanes_for(ctx.facts, b.dtype_bits),
                          ctx.cores, rfactor=False)
        ir = ctx.attempt(NAME, dict(kn), build)
        if ir is not None:
            out.append(ir)
    return out or None

