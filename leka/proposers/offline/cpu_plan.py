"""Per-block CPU building blocks shared by the offline rules: inline, parallelise, vectorise, tile, rfactor.

Every helper works on a Sketch (a live schedule) by block name, reads loop names back from it, and
raises IRApplyError when TVM refuses a step (the calling rule then drops that variant).
"""
from __future__ import annotations

from typing import Any

from .analysis import BlockInfo, keep_as_table
from .sketch import Sketch


MIN_PARALLEL_WORK = 1 << 16  # loop-nest iterations below which a parallel loop does not pay


def lanes_for(facts: dict[str, Any], bits: int) -> int:
    """Vector lanes for a block. Narrow outputs (u8, f16) are usually computed in 32-bit arithmetic,
    so lanes are counted at 32 bits: 64-lane u8 vectors of widened math make LLVM split and shuffle."""
    return max(1, int(facts.get("vector_bits") or 128) // max(32, bits))


def divisors_near(extent: int, wanted: list[int]) -> list[int]:
    """The wanted tile sizes that divide the extent and are smaller than it, in the given order."""
    return [w for w in wanted if 1 < w < extent and extent % w == 0]


def inline_intermediates(sk: Sketch, infos: list[BlockInfo], inline_padding: bool = False) -> list[str]:
    """compute_inline spatial-only blocks that do not write an output (padding only when asked:
    inlining it puts if_then_else inside the vector loop) and not the small transcendental tables."""
    done = []
    for b in infos:
        if b.writes_output or b.is_reduction or b.is_ordered or (b.has_condition and not inline_padding) \
                or keep_as_table(b, infos):
            continue
        if sk.try_do("compute_inline", block=b.name) is not None:
            done.append(b.name)
    return done


def vector_width(extent: int, lanes: int) -> int | None:
    """The widest of lanes, lanes/2, lanes/4 (at least 4) that divides the extent and is smaller."""
    w = lanes
    while w >= 4:
        if extent % w == 0 and extent > w:
            return w
        w //= 2
    return None


def vectorize_inner(sk: Sketch, loop: str, lanes: int, max_whole: int = 64) -> str | None:
    """Vectorise the loop by the widest fitting width (split when it divides), or whole when short."""
    ext = sk.extent(loop)
    if 4 <= ext <= lanes:
        sk.do("vectorize", loop=loop)
        return loop
    w = vector_width(ext, lanes)
    if w:
        inner = sk.do("split", loop=loop, factors=[None, w])[1]
        sk.do("vectorize", loop=inner)
        return inner
    if 2 <= ext <= max_whole and (ext <= lanes or ext % 4 == 0):
        sk.do("vectorize", loop=loop)
        return loop
    return None


def body_iterations(stmt: Any) -> int:
    """Loop iterations inside a block body (1 for a plain statement): a block holding a whole serial
    recurrence (scan lanes) does far more work per instance than its own loop nest shows."""
    kind = type(stmt).__name__
    if kind == "For":
        return int(stmt.extent) * body_iterations(stmt.body) if hasattr(stmt.extent, "value") else 1
    if kind == "SeqStmt":
        return max(1, sum(body_iterations(s) for s in stmt.seq))
    if kind == "SBlockRealize":
        return body_iterations(stmt.block.body)
    if hasattr(stmt, "body") and not isinstance(stmt.body, (int, float)):
        return body_iterations(stmt.body)
    return 1


def parallel_outer(sk: Sketch, loops: list[str], cores: int, min_work: int = MIN_PARALLEL_WORK) -> str | None:
    """Fuse outer loops until there is enough parallel work (>= 4 x cores iterations), then parallel."""
    if not loops:
        return None
    block = sk.live_block_of(loops[0])
    total = body_iterations(sk.live.sch.get(sk.live.block(block)).body)
    for lp in sk.loops(block):
        total *= sk.extent(lp)
    if total < min_work:  # thread start-up (~10 us) costs more than the loop itself
        return None
    take, work = [], 1
    for lp in loops:
        take.append(lp)
        work *= sk.extent(lp)
        if work >= 4 * cores:
            break
    if work < 2:
        return None  # one lane: nothing to share between threads
    fused = sk.do("fuse", loops=take)[0] if len(take) > 1 else take[0]
    sk.do("parallel", loop=fused)
    return fused


def schedule_spatial(sk: Sketch, b: BlockInfo, lanes: int, cores: int, outer_done: int = 0,
                     parallel: bool = True, min_work: int = MIN_PARALLEL_WORK, vector: str = "contiguous",
                     fuse_short: bool = False) -> None:
    """Parallel over the outer loops; vectorised innermost loop when its accesses are contiguous
    (vector="contiguous"), always ("gather": vector gathers still beat scalar code for heavy bodies),
    or never ("none": LLVM's own loop vectoriser sometimes does better on integer/narrow code)."""
    loops = sk.loops(b.name)[outer_done:]
    if not loops:
        return
    if vector == "none":
        if parallel and outer_done == 0:
            parallel_outer(sk, loops[:-1] or loops, cores, min_work)
        return
    if vector == "unroll":
        # unroll-only: a short inner loop of gathers/branches is unrolled whole (LLVM then schedules the
        # loads of neighbouring iterations together); a long one by chunks of 8
        unrolled = loops[-1]
        ext = sk.extent(unrolled)
        if ext > 16:
            if ext % 8:
                return
            unrolled = sk.do("split", loop=unrolled, factors=[None, 8])[1]
        sk.do("unroll", loop=unrolled)
        if parallel and outer_done == 0 and len(loops) > 1:
            parallel_outer(sk, loops[:-1], cores, min_work)
        return
    gather = vector == "gather"
    contiguous = b.inner_contiguous
    if fuse_short and b.inner_contiguous and not b.is_reduction:
        # a short innermost loop (3 colour channels): fuse trailing loops so a vector is filled
        # (a loss when the body branches on that index: the vector then computes index % 3)
        while len(loops) > 2 and sk.extent(loops[-1]) < lanes:
            loops = loops[:-2] + sk.do("fuse", loops=loops[-2:])
    elif len(loops) > 1 and sk.extent(loops[-1]) < 4:
        sk.do("unroll", loop=loops[-1])  # too short to vectorise: unrolled, LLVM specialises the body
        loops = loops[:-1]
        contiguous = False  # the next loop out strides by the unrolled extent
    inner = loops[-1] if (contiguous or gather) else None
    outer = loops[:-1] if (inner and len(loops) > 1) else loops
    if inner is not None:
        vectorize_inner(sk, inner, lanes)
    if parallel and outer_done == 0 and outer and (inner is None or len(loops) > 1):
        parallel_outer(sk, outer, cores, min_work)


def schedule_row_reduction(sk: Sketch, b: BlockInfo, lanes: int, cores: int, rfactor: bool,
                           outer_done: int = 0, parallel: bool = True, min_work: int = MIN_PARALLEL_WORK,
                           unroll: bool = False) -> None:
    """Reduction with the reduce loops innermost (rows, dots): parallel rows; optionally vectorise the
    dot through rfactor (a lanes-wide partial-sum buffer whose lanes are contiguous), or unroll a short
    innermost reduce loop (unroll=True)."""
    loops = sk.loops(b.name)
    if unroll and b.reduce and b.reduce[-1] == len(b.kinds) - 1 and len(loops) == len(b.kinds):
        ext = sk.extent(loops[-1])
        if ext <= 16:
            sk.do("unroll", loop=loops[-1])
        elif ext % 8 == 0:
            sk.do("unroll", loop=sk.do("split", loop=loops[-1], factors=[None, 8])[1])
        rfactor = False
        loops = sk.loops(b.name)
    shift = len(b.kinds) - len(loops)  # leading loops fused into one by a row fusion
    sp = [loops[i - shift] for i in b.spatial if i - shift >= outer_done]
    # integer sums are associative: LLVM already vectorises the plain loop, rfactor only adds traffic
    if rfactor and b.is_float and b.reduce_contiguous and b.reduce and b.reduce[-1] == len(b.kinds) - 1:
        k = loops[-1]
        w = vector_width(sk.extent(k), lanes)
        if w:
            k1 = sk.do("split", loop=k, factors=[None, w])[1]
            rf = sk.do("rfactor", loop=k1, factor_axis=len(b.spatial))[0]
            rf_loops = sk.loops(rf)
            sk.do("vectorize", loop=rf_loops[-1])
            rf_sp = rf_loops[outer_done:len(b.spatial) - shift]
            if parallel and outer_done == 0 and rf_sp:
                parallel_outer(sk, rf_sp, cores, min_work)
            # partial sums start at zero outside the vector loop
            sk.do("decompose_reduction", block=rf, loop=sk.loops(rf)[-2])
            wb = sk.loops(b.name)
            if parallel and outer_done == 0 and len(b.spatial) > 0:
                parallel_outer(sk, wb[:len(b.spatial) - shift], cores, min_work)
            return
    if parallel and outer_done == 0 and sp:
        parallel_outer(sk, sp, cores, min_work)


def rfactor_row_lanes(sk: Sketch, blocks: list[BlockInfo], lanes: int) -> list[str]:
    """Split each float row reduction (its one reduce loop innermost and contiguous) into lanes-wide partial
    results (rfactor), before the blocks move under a shared row loop: TVM's rfactor wants the block first
    under its loops, which it no longer is once a row holds the whole pipeline. Returns the rf blocks."""
    from leka.ir import IRApplyError

    rfs = []
    for b in blocks:
        if not (b.is_float and b.reduce_contiguous and b.reduce == [len(b.kinds) - 1]):
            continue
        k = sk.loops(b.name)[-1]
        w = vector_width(sk.extent(k), lanes)
        if w:
            k1 = sk.do("split", loop=k, factors=[None, w])[1]
            rfs.append(sk.do("rfactor", loop=k1, factor_axis=len(b.spatial))[0])
    if not rfs:
        raise IRApplyError("no float row reduction to split into vector lanes")
    return rfs


def vectorize_rf_lanes(sk: Sketch, rf: str) -> str:
    """An rf block computed at its row: loops [row, lanes, unit loops..., k0] -> k0 outside, lanes innermost and
    vectorised. Returns k0 (where the partial sums' initialisation goes)."""
    loops = sk.loops(rf)
    sk.do("reorder", loops=[loops[-1], loops[1]])
    loops = sk.loops(rf)
    sk.do("vectorize", loop=loops[-1])
    return loops[1]


def pack_transposed_operands(sk: Sketch, b: BlockInfo, outputs: set[str]) -> tuple[BlockInfo, list[str]]:
    """Pack, transposed, each operand that walks the block's innermost spatial iterator along its
    second-to-last axis (K in Q @ K^T): cache_read at the root + transform_layout swapping the last
    two axes. Returns the block's fresh analysis and the packing blocks (IRApplyError when the block
    is still not contiguous afterwards)."""
    from leka.ir import IRApplyError

    from .analysis import _uses, analyze

    blk = sk.live.sch.get(sk.live.block(b.name))
    var = blk.iter_vars[b.spatial[-1]].var.name
    packed = []
    for idx, reg in enumerate(blk.reads):
        uses = [i for i, r in enumerate(reg.region) if _uses(r.min, var)]
        if len(reg.region) < 2 or uses != [len(reg.region) - 2]:
            continue
        new = sk.mem_do("cache_read", block=b.name, buffer=idx, scope="global", at=None)[0]
        perm = list(range(len(reg.region)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        sk.mem_do("transform_layout", block=new, access="write", buffer=0, permutation=perm)
        packed.append(new)
    info = next(x for x in analyze(sk.live, outputs) if x.name == b.name)
    if not packed or not info.inner_contiguous:
        raise IRApplyError(f"packing did not make the innermost spatial loop of {b.name} contiguous")
    return info, packed


def fuse_epilogues(sk: Sketch, epilogues: list[str]) -> None:
    """Fold the elementwise stages after a reduction into its write-back, in order: reverse_compute_inline
    each; a stage whose input another stage also reads (GELU: x * (erf(x / sqrt 2) + 1) reads the bias add
    twice) is compute_inlined into its consumers instead, until the last reader takes the whole chain."""
    for ep in epilogues:
        if sk.try_do("reverse_compute_inline", block=ep) is None:
            sk.try_do("compute_inline", block=ep)


def tile_reduction(sk: Sketch, b: BlockInfo, lanes: int, cores: int, ti: int, tj: int, tk: int,
                   cache_write: bool, epilogues: list[str]) -> None:
    """Register/cache tiling of a reduction whose innermost spatial loop is contiguous (GEMM, conv):
    [outer spatial, i0, j0] parallel | reduce loops (largest split k0..k1) | i1, j1 (vectorised)."""
    loops = sk.loops(b.name)
    sp = [loops[x] for x in b.spatial]
    rd = [loops[x] for x in b.reduce]
    j = sp[-1]
    i0: str | None
    i1: str | None
    if len(sp) >= 2:
        i = sp[-2]
        i0, i1 = sk.do("split", loop=i, factors=[None, ti]) if ti > 1 else (i, None)
    else:  # column reduction (sum over rows of a row-major matrix): tile the one spatial loop
        i0 = i1 = None
    j0, j1 = sk.do("split", loop=j, factors=[None, tj])
    big = max(rd, key=sk.extent)
    if tk > 1 and sk.extent(big) % tk == 0 and sk.extent(big) > tk:
        k0, k1 = sk.do("split", loop=big, factors=[None, tk])
        red = [k0] + [r for r in rd if r != big] + [k1]
    else:
        k1 = None
        red = rd
    outer = sp[:-2] + [x for x in (i0, j0) if x is not None]
    inner = ([i1] if i1 else []) + [j1]
    sk.do("reorder", loops=outer + red + inner)
    fused = parallel_outer(sk, outer, cores) if outer else None
    par_loops = [lp for lp in sk.loops(b.name) if lp == fused]
    anchor = par_loops[0] if par_loops else sk.loops(b.name)[len(outer) - 1]
    if cache_write:
        cw = sk.mem_do("cache_write", block=b.name, buffer=0, scope="global", at=anchor)[0]
        fuse_epilogues(sk, epilogues)
        cw_loops = sk.loops(cw)
        vectorize_inner(sk, cw_loops[-1], lanes)
    if k1 is not None and sk.extent(k1) <= 16:
        sk.do("unroll", loop=k1)
    vectorize_inner(sk, sk.loops(b.name)[-1], lanes)
    first_red = next(lp for lp in sk.loops(b.name) if lp in red)
    sk.do("decompose_reduction", block=b.name, loop=first_red)


def schedule_rest(sk: Sketch, infos: list[BlockInfo], skip: set[str], lanes_of: Any, cores: int,
                  rfactor: bool, parallel: bool = True, min_work: int = MIN_PARALLEL_WORK,
                  vector: str = "contiguous", fuse_short: bool = False) -> None:
    """Default treatment for every remaining top-level block not handled by the calling rule."""
    alive = set(sk.live.block_names())
    for b in infos:
        if b.name in skip or b.name not in alive:
            continue
        if b.is_ordered:
            # TVM refuses parallel/vectorize over blocks with scan iterators ("does not have compact
            # dataflow"), even on their independent outer loops: leave them serial
            continue
        if b.is_reduction:
            schedule_row_reduction(sk, b, lanes_of(b), cores, rfactor, parallel=parallel, min_work=min_work,
                                   unroll=vector == "unroll")
        else:
            schedule_spatial(sk, b, lanes_of(b), cores, parallel=parallel, min_work=min_work, vector=vector,
                             fuse_short=fuse_short)
