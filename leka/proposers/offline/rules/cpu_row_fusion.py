"""CPU multi-block row pipelines (softmax, layernorm, normalisations): compute every producer inside the
output block's outer row loop, parallelise that loop and vectorise each block's contiguous inner loop.
Keeps a row's intermediates in cache instead of streaming whole tensors between blocks. A pipeline calling
exp/erf/tanh (softmax) also gets the fused-row schedules on alg.fast_math's polynomial rewrite, first: libm
calls keep the row loops scalar, the polynomials vectorise."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from .cpu_matmul_epilogue import fast_start
from ..cpu_plan import (inline_intermediates, lanes_for, rfactor_row_lanes, schedule_row_reduction, schedule_spatial,
                        vectorize_rf_lanes)

NAME = "cpu.row_fusion"


def _shared_row_dims(infos, out) -> int:
    """Leading loops that every block shares as spatial loops of equal extent (the 'rows')."""
    n = 0
    while n < len(out.kinds) - 1 and all(
            len(b.kinds) > n + 1 and b.kinds[n] == "S" and b.extents[n] == out.extents[n] for b in infos):
        n += 1
    return n


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu" or len(ctx.infos) < 2:
        return None
    outs = [b for b in ctx.infos if b.writes_output]
    if any(b.is_ordered for b in ctx.infos):
        return None
    if len(outs) != 1 or outs[0] is not ctx.infos[-1] or outs[0].kinds[0] != "S":
        return None
    n_rows = _shared_row_dims(ctx.infos, outs[0])
    if n_rows == 0:
        return None

    def lanes(b):
        return lanes_for(ctx.facts, b.dtype_bits)

    res = []
    fast = fast_start(ctx) if any(b.transcendental for b in ctx.infos) else None
    # "rows": each row reduction split into vector lanes (rfactor) before the row fusion; True: after it
    variants = [(fast, False, "rows"), (fast, False, False), (fast, True, False)] if fast is not None else []
    for start, inline, rfactor in variants + [(None, False, "rows"), (None, False, False), (None, True, False),
                                              (None, False, True)]:
        def build(sk, inline=inline, rfactor=rfactor):
            done = set(inline_intermediates(sk, ctx.infos)) if inline else set()
            out = outs[0]
            reds = [b for b in ctx.infos if b.is_reduction and b is not out and b.name not in done]
            rfs = rfactor_row_lanes(sk, reds, lanes(out)) if rfactor == "rows" else []
            lead = sk.loops(out.name)[:n_rows]
            row = sk.do("fuse", loops=lead)[0] if len(lead) > 1 else lead[0]
            for name in reversed([n for n in sk.live.block_names() if n != out.name]):
                sk.do("compute_at", block=name, loop=row)
            firsts = [vectorize_rf_lanes(sk, rf) for rf in rfs]
            for b in [b for b in ctx.infos if b.name not in done and b.name in sk.live.block_names()]:
                if b.is_reduction and rfs:
                    continue  # now the lanes' final sum: a few scalar steps per row
                if b.is_reduction:
                    schedule_row_reduction(sk, b, lanes(b), ctx.cores, bool(rfactor), outer_done=1)
                else:
                    schedule_spatial(sk, b, lanes(b), ctx.cores, outer_done=1)
            sk.do("parallel", loop=row)
            for rf, k0 in zip(rfs, firsts):
                sk.do("decompose_reduction", block=rf, loop=k0)
        knobs = {"inline": inline, "rfactor": rfactor} | ({"fast_math": True} if start is not None else {})
        ir = ctx.attempt(NAME, knobs, build, start=start)
        if ir is not None:
            res.append(ir)
    return res or None
