"""CPU GEMM/conv-like reductions (innermost spatial loop contiguous): tile two spatial loops for registers
and cache, split the largest reduce loop, accumulate in a cache_write tile written back per tile
(with elementwise epilogues inlined into the write-back), vectorise, unroll, decompose the reduction."""
from __future__ import annotations

from itertools import product

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import divisors_near, inline_intermediates, lanes_for, schedule_rest, tile_reduction

NAME = "cpu.tile_reduction"


def variants(ti_ext: int, tj_ext: int, lanes: int, k_ext: int) -> list[dict]:
    tis = divisors_near(ti_ext, [8, 4, 16, 32, 2]) or [1]
    tjs = [t for t in (2 * lanes, lanes, 4 * lanes) if t <= tj_ext and tj_ext % t == 0] or []
    tks = divisors_near(k_ext, [4, 8, 16]) or [1]
    out = []
    for cw, ti, tj, tk in product((True, False), tis[:3], tjs[:3], tks[:2]):
        out.append({"ti": ti, "tj": tj, "tk": tk, "cache_write": cw})
    return out


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    mains = [b for b in ctx.infos if b.is_reduction and not b.is_ordered and len(b.spatial) >= 1 and b.inner_contiguous]
    if len(mains) != 1:
        return None
    main = mains[0]
    lanes = lanes_for(ctx.facts, main.dtype_bits)
    sp_ext = [main.extents[i] for i in main.spatial]
    k_ext = max(main.extents[i] for i in main.reduce)
    epilogues = [b.name for b in ctx.infos[ctx.infos.index(main) + 1:] if not b.is_reduction and not b.is_ordered]
    out = []
    for kn in variants(sp_ext[-2] if len(sp_ext) > 1 else 1, sp_ext[-1], lanes, k_ext):
        def build(sk, kn=kn):
            done = set(inline_intermediates(sk, [b for b in ctx.infos if b.name not in epilogues]))
            tile_reduction(sk, main, lanes, ctx.cores, kn["ti"], kn["tj"], kn["tk"], kn["cache_write"],
                           epilogues if kn["cache_write"] else [])
            schedule_rest(sk, ctx.infos, done | {main.name}, lambda b: lanes_for(ctx.facts, b.dtype_bits),
                          ctx.cores, rfactor=False)
        ir = ctx.attempt(NAME, kn, build)
        if ir is not None:
            out.append(ir)
    return out or None
