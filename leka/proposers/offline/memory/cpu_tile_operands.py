"""Operand tiles on top of the current schedule: for each GEMM-like reduction (an operand reused across
outputs), copy the operand's slice that one parallel tile (or one outer reduce step) reads into a
compact buffer — cache_read computed at that loop, its innermost copy loop vectorised — so the inner
loops stream from contiguous memory instead of striding through the whole operand. Variants: per
operand x {at the parallel tile loop, at the first reduce loop inside it}; measurement decides."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import lanes_for, vectorize_inner

NAME = "mem.cpu_tile_operands"


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    cur = ctx.current
    if ctx.family != "cpu" or cur is None or not cur.schedule.steps:
        return None
    parallel = {s.args.get("loop") for s in cur.schedule.steps if s.op == "parallel"}
    live = cur.apply()
    out = []
    names = live.block_names()
    for b in ctx.infos:
        # decompose_reduction renames the block's update part
        name = b.name if b.name in names else f"{b.name}_update"
        if not (b.is_reduction and b.reuse) or name not in names:
            continue
        loops = live.loops_of(name)
        tile = next((lp for lp in loops if lp in parallel), None)
        if tile is None:
            continue
        inner = loops[loops.index(tile) + 1:]
        ats = [tile] + ([inner[0]] if inner else [])
        blk = live.sch.get(live.sch.get_sblock(name))
        written = {w.source.name for w in blk.writes}
        for idx, reg in enumerate(blk.reads):
            if reg.source.name in written or len(reg.region) < 2:
                continue
            for at in ats:
                def build(sk, idx=idx, at=at, name=name):
                    new = sk.mem_do("cache_read", block=name, buffer=idx, scope="global", at=at)[0]
                    copy_loops = sk.loops(new)
                    if copy_loops:
                        vectorize_inner(sk, copy_loops[-1], lanes_for(ctx.facts, b.dtype_bits))
                knobs = {"block": name, "operand": reg.source.name, "at": "tile" if at == tile else "reduce"}
                ir = ctx.attempt(NAME, knobs, build, start=cur)
                if ir is not None:
                    out.append(ir)
    return out or None
