"""Scan lanes: a recurrence along one axis of a [lanes, time] grid (T.axis.scan) is independent per
lane, but TVM keeps a block with a scan iterator serial as a whole (no parallel/vectorize). Blockize the
scan loop so each lane becomes one outer block instance holding its serial recurrence, then drop the
outer block's unit scan iterator and its reads of its own outputs (they are produced inside it). The
outer block is then an ordinary spatial block: the schedule rules parallelise over lanes and unroll.
Refused when a written region does not depend on every lane iterator (state shared across lanes)."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from .common import as_candidate, fresh_schedule, root_blocks

NAME = "alg.scan_lanes"


def _uses_all(region, lane_vars) -> bool:
    from tvm.tirx.analysis import undefined_vars

    used = {v.name for r in region.region for v in undefined_vars(r.min)}
    return all(v in used for v in lane_vars)


def lane_blocks(func):
    """Rewrite every root block with spatial lanes outside a scan iterator; None when none applies."""
    from tvm import s_tir, tirx

    sch = s_tir.Schedule(func, error_render_level="fast")
    changed = []
    for blk in root_blocks(sch):
        kinds = [int(iv.iter_type) for iv in blk.iter_vars]
        if 0 not in kinds or not any(k not in (0, 2) for k in kinds):
            continue
        loops = sch.get_loops(sch.get_sblock(blk.name_hint))
        first_ordered = next(i for i, k in enumerate(kinds) if k not in (0, 2))
        if len(loops) != len(kinds) or any(k != 0 for k in kinds[:first_ordered]) or first_ordered == 0:
            continue
        outer_rv = sch.blockize(loops[first_ordered])
        changed.append(sch.get(outer_rv).name_hint)
    if not changed:
        return None

    for name in changed:
        rv = sch.get_sblock(name)
        blk = sch.get(rv)
        if any(int(iv.iter_type) not in (0, 2) and int(iv.dom.extent) != 1 for iv in blk.iter_vars):
            return None
        lane_vars = [iv.var.name for iv in blk.iter_vars if int(iv.iter_type) == 0]
        if not all(_uses_all(w, lane_vars) for w in blk.writes):
            return None  # state shared across lanes: they are not independent
        # the unit scan iterator becomes a unit spatial one (no substitution needed: it is bound to 0)
        ivs = [iv if int(iv.iter_type) == 0 else tirx.IterVar(iv.dom, iv.var, 0) for iv in blk.iter_vars]
        reads = [r for r in blk.reads if not any(r.source.same_as(w.source) for w in blk.writes)]
        new_blk = s_tir.SBlock(ivs, reads, blk.writes, blk.name_hint, blk.body, blk.init, blk.alloc_buffers,
                               blk.match_buffers, blk.annotations)
        sch.state.replace(sch.get_sref(rv), new_blk, {blk: new_blk})
    return sch.mod["main"]


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if not any(b.is_ordered for b in ctx.infos):
        return None
    sch = fresh_schedule(ctx)
    func = lane_blocks(sch.mod["main"])
    if func is None:
        return None
    return [as_candidate(ctx, func, NAME, {}, "scan lanes: one block per independent lane, serial recurrence inside")]
