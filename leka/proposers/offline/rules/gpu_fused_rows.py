"""GPU: the whole task as ONE kernel. A reduction with its epilogue (cast, bias, norm, activation) or several
row reductions that feed one output (cosine similarity, normalised cross-correlation) otherwise launch
one kernel per block; on a GPU each launch costs microseconds, more than these edge-sized kernels compute.
The output block's spatial loops are fused into rows (one output element each; or, coarser, its leading
spatial loops: a softmax row, a batch element whose chain of small matmuls stays in one thread), `rows`
per thread block on threadIdx.y. Every producer is computed at the row loop (compute_at) into a register
(lanes = 1, or one value per row) or a shared buffer; a reduction is either serial in the row's thread
(short reductions) or spread over `lanes` threads of threadIdx.x (TVM's allreduce: warp shuffles up to 32
lanes, shared memory beyond).
Declines: a single block (the other rules' case), no reduction, an output block that is not the last, an
ordered (scan) block, or a fusion that would recompute more than REDUNDANCY x the task's own work."""
from __future__ import annotations

import numpy as np

from leka.ir import CandidateIR, IRApplyError

from ..context import RuleContext
from ..cpu_plan import inline_intermediates
from .gpu_bind_spatial import divisor_at_most, max_threads

NAME = "gpu.fused_rows"
REDUNDANCY = 2.0  # executed iterations of the fused kernel / the blocks' own iterations, at most
SHORT = 16  # reductions up to this many terms per output stay serial in one thread
LONG = 8192  # rows of at least this many terms (a 1x32000 softmax): one block of up to WIDE lanes per row
WIDE = 1024  # CUDA's threads per block (PoCL allows 4096: the same schedules as on the GPU)


def _terms(b) -> int:
    return int(np.prod([b.extents[i] for i in b.reduce])) if b.reduce else 1


def _variants(terms: int, cap: int) -> list[tuple[int, int]]:
    """(rows per thread block, threads per row) to try, most promising first."""
    if terms <= SHORT:
        cands = [(256, 1), (128, 1), (64, 1)]
    elif terms <= 256:
        cands = [(8, 32), (128, 1), (16, 16), (4, 64)]
    elif terms < LONG:
        cands = [(8, 32), (1, 256), (2, 128), (4, 64), (128, 1)]  # the last for terms no lane count divides
    else:  # a warp or 256 lanes leave a 32000-term row 1000 / 125 serial terms per lane (0.8x dlight)
        cands = [(1, n) for n in _wide_lanes(terms, cap)] + [(1, 256), (8, 32), (128, 1)]
    return [(r, t) for r, t in cands if r * t <= cap]


def _wide_lanes(terms: int, cap: int) -> list[int]:
    """The two widest whole-warp lane counts above 256 that divide `terms` (LiveSchedule splits only by
    divisors), at most WIDE: 1024 and 512 for 8192 terms, 800 and 640 for 32000."""
    top = min(cap, WIDE)
    return [n for n in range(top - top % 32, 256, -32) if terms % n == 0][:2]


def _iterations(sk, block: str, below: str) -> int:
    """Iterations of `block`'s loops nested under loop `below` (per row)."""
    loops = sk.loops(block)
    n = 1
    for lp in loops[loops.index(below) + 1:]:
        n *= sk.extent(lp)
    return n


def _row_elements(sk, block: str, row: str) -> int:
    """Elements of `block`'s output per row: its spatial loops under the row loop."""
    loops = sk.loops(block)
    n = 1
    for lp in loops[loops.index(row) + 1:]:
        if block not in sk.live.reducing_blocks(lp):
            n *= sk.extent(lp)
    return n


def _spread_reduction(sk, block: str, row: str, lanes: int) -> None:
    """The reduction loops of `block` under the row loop: fused, the inner `lanes` on threadIdx.x."""
    loops = sk.loops(block)
    inner = loops[loops.index(row) + 1:]
    red = [lp for lp in inner if block in sk.live.reducing_blocks(lp)]
    if not red:
        raise IRApplyError(f"{block}: no reduction loop under the row loop")
    if inner[-len(red):] != red:
        sk.do("reorder", loops=[lp for lp in inner if lp not in red] + red)
    r = sk.do("fuse", loops=red)[0] if len(red) > 1 else red[0]
    if sk.extent(r) % lanes:
        raise IRApplyError(f"{block}: {sk.extent(r)} terms do not split into {lanes} lanes")
    sk.do("bind", loop=sk.do("split", loop=r, factors=[None, lanes])[1], thread="threadIdx.x")


def _spread_spatial(sk, block: str, row: str, lanes: int) -> None:
    """The spatial loops of `block` under the row loop over the row's threadIdx.x lanes (where they divide;
    otherwise every lane computes them, the same values)."""
    loops = sk.loops(block)
    sp = [lp for lp in loops[loops.index(row) + 1:] if block not in sk.live.reducing_blocks(lp)]
    if not sp:
        return
    f = sk.do("fuse", loops=sp)[0] if len(sp) > 1 else sp[0]
    if sk.extent(f) % lanes == 0:
        sk.do("bind", loop=sk.do("split", loop=f, factors=[None, lanes])[1], thread="threadIdx.x")


def _rows_of(sk, out, depth: int) -> str:
    """The output's first `depth` spatial loops (moved in front of its reduce loops), fused: one row each."""
    loops = sk.loops(out.name)
    sp = [loops[i] for i in out.spatial]
    if [loops.index(x) for x in sp] != list(range(len(sp))):
        sk.do("reorder", loops=sp + [loops[i] for i in out.reduce])
    head = sp[:depth]
    return sk.do("fuse", loops=head)[0] if len(head) > 1 else head[0]


def _build(sk, out, producers: list, rows: int, lanes: int, depth: int) -> None:
    fused = _rows_of(sk, out, depth)
    n_rows = sk.extent(fused)
    bx, row = sk.do("split", loop=fused, factors=[None, rows])
    sk.do("bind", loop=bx, thread="blockIdx.x")
    sk.do("bind", loop=row, thread="threadIdx.y" if lanes > 1 else "threadIdx.x")
    work, own = out.iterations, out.iterations
    if lanes > 1:
        _spread_spatial(sk, out.name, row, lanes)
    for p in reversed(producers):  # consumers first: each producer lands under the row loop
        sk.do("compute_at", block=p.name, loop=row)
        work += n_rows * _iterations(sk, p.name, row)
        own += p.iterations
        per_row = _row_elements(sk, p.name, row)
        scalar = per_row == 1
        if lanes > 1 and not scalar and n_rows * per_row > int(np.prod([p.extents[i] for i in p.spatial])):
            # rows whose windows overlap (a 3x3 convolution over the producer) would write the same elements of
            # one shared buffer from several threadIdx.y rows while others read them: wrong on an H100
            # (c3_bottleneck_silu: 12,492 of 12,544 outputs); registers (lanes = 1) keep each row's copy apart
            raise IRApplyError("rows' windows overlap in a shared buffer")
        if lanes > 1:
            (_spread_reduction if p.is_reduction else _spread_spatial)(sk, p.name, row, lanes)
        # per-row intermediates: registers when the thread owns them, shared when threadIdx.x lanes share them.
        # One value per row (a softmax max or sum, a norm) stays in registers even across lanes: TVM's
        # allreduce hands every lane the result, while a shared one is written by lane 0 only and read by
        # all lanes at an equal index, where TVM puts no barrier (wrong on the H200: leka/compiler/races.py)
        sk.mem_do("set_scope", block=p.name, buffer=0, scope="shared" if lanes > 1 and not scalar else "local")
    if work > REDUNDANCY * own:
        raise IRApplyError(f"fusion recomputes {work / own:.1f}x the task's work")


def _at_depth(ctx: RuleContext, out, terms: int, depth: int) -> list[CandidateIR]:
    n_rows = int(np.prod([out.extents[i] for i in out.spatial[:depth]]))
    found, seen = [], set()
    for want, lanes in _variants(terms, max_threads(ctx)):
        rows = divisor_at_most(n_rows, want)  # LiveSchedule splits only by divisors
        if (rows, lanes) in seen or rows * lanes < 32:
            continue
        seen.add((rows, lanes))

        def build(sk, rows=rows, lanes=lanes):
            done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
            _build(sk, out, [b for b in ctx.infos[:-1] if b.name not in done], rows, lanes, depth)
        ir = ctx.attempt(NAME, {"rows": rows, "lanes": lanes, "depth": depth}, build)
        if ir is not None:
            found.append(ir)
    return found


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    if len(ctx.infos) < 2 or any(b.is_ordered for b in ctx.infos):
        return None
    out = ctx.infos[-1]
    if not out.writes_output or sum(b.writes_output for b in ctx.infos) != 1 or not out.spatial:
        return None
    reductions = [b for b in ctx.infos if b.is_reduction]
    if not reductions:
        return None  # elementwise chains inline into one kernel already (gpu.vector_elementwise)
    terms = max(_terms(b) for b in reductions)
    # rows = every output element; and the deepest coarser row (a softmax row, a batch element) within
    # REDUNDANCY: each row's producers computed once for all of its outputs
    found = [] if out.is_reduction else _at_depth(ctx, out, terms, len(out.spatial))
    for depth in range(len(out.spatial) - 1, 0, -1):
        coarse = _at_depth(ctx, out, terms, depth)
        if coarse:
            found += coarse
            break
    return found or None
