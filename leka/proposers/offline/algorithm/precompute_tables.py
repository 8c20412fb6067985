"""Precomputed tables: a transcendental subexpression of a block's body that depends on a few of its
iterators only (DFT twiddles cos(2*pi*k*n/N), window functions, spatial Gaussian weights, rotary angles,
a per-feature 1/sqrt(var + eps) applied to every frame) is evaluated once per distinct index into a table
by a new block placed just before the block, and the body reads the table. A DFT over 16 signals then
computes its 64x64 twiddles once instead of 16 times, and the reduction that remains is a plain
GEMM-like product the schedule rules tile. The subexpression may read buffers the block does not write.

Taken when the iterators the subexpression uses span at most 1/MIN_REUSE of the block's iterations."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR

from ..analysis import TRANSCENDENTAL
from ..context import RuleContext
from .common import BINARY_NODES, as_candidate, loop_nest, point_region, rebuild_nest, rewrite_root_nests

NAME = "alg.precompute_tables"
MIN_REUSE = 4


def _info(e: Any) -> tuple[set[str], list[Any], bool]:
    """(iterator names used, the loads it makes, calls a transcendental) of an expression."""
    from tvm import ir, tirx
    from tvm.tirx.analysis import undefined_vars

    loads: list[Any] = []
    transc = False

    def visit(x: Any) -> None:
        nonlocal transc
        if isinstance(x, ir.expr.TensorLoad):
            loads.append(x)
            return
        if isinstance(x, ir.expr.Call):
            name = getattr(x.op, "name", "")
            transc = transc or name.removeprefix("tirx.") in TRANSCENDENTAL
            for a in x.args:
                visit(a)
            return
        kind = type(x).__name__
        if kind in BINARY_NODES:
            visit(x.a)
            visit(x.b)
        elif isinstance(x, tirx.Cast) or kind == "Not":
            visit(x.value if isinstance(x, tirx.Cast) else x.a)
        elif kind == "Select":
            visit(x.condition)
            visit(x.true_value)
            visit(x.false_value)

    visit(e)
    buffers = {ld.source.name for ld in loads}  # a load's buffer variable is not an iterator
    return {v.name for v in undefined_vars(e)} - buffers, loads, transc


def _pick(e: Any, extents: dict[str, int], total: int, written: Any, out: list[Any]) -> None:
    """Collect the largest qualifying subexpressions (top-down: a taken node is not descended)."""
    from tvm import ir, tirx

    names, loads, transc = _info(e)
    own = any(ld.source.same_as(written) for ld in loads)  # an accumulator read is not invariant
    if not own and transc and names and names <= set(extents):
        span = 1
        for n in names:
            span *= extents[n]
        if span * MIN_REUSE <= total:
            out.append(e)
            return
    kind = type(e).__name__
    if kind in BINARY_NODES:
        _pick(e.a, extents, total, written, out)
        _pick(e.b, extents, total, written, out)
    elif isinstance(e, tirx.Cast):
        _pick(e.value, extents, total, written, out)
    elif isinstance(e, ir.expr.Call) or kind == "Select":
        pass  # not rebuilt below: a subexpression inside stays in place


def _replace(e: Any, swap: list[tuple[Any, Any]]) -> Any:
    from tvm import tirx

    for old, new in swap:
        if e.same_as(old):
            return new
    kind = type(e).__name__
    if kind in BINARY_NODES:
        a, b = _replace(e.a, swap), _replace(e.b, swap)
        return e if (a.same_as(e.a) and b.same_as(e.b)) else type(e)(a, b)
    if isinstance(e, tirx.Cast):
        v = _replace(e.value, swap)
        return e if v.same_as(e.value) else tirx.Cast(e.ty, v)
    return e


def _tables(block: Any) -> tuple[list[Any], Any] | None:
    """(table nests, rewritten block) for one block; None when nothing qualifies."""
    from tvm import s_tir, tirx

    store = block.body
    if not isinstance(store, tirx.BufferStore):
        return None
    extents = {iv.var.name: int(iv.dom.extent) for iv in block.iter_vars}
    total = 1
    for v in extents.values():
        total *= v
    found: list[Any] = []
    _pick(store.value, extents, total, store.buffer, found)
    if not found:
        return None
    nests, swap, reads = [], [], list(block.reads)
    for n, expr in enumerate(found):
        names, loads, _ = _info(expr)
        ivs = [iv for iv in block.iter_vars if iv.var.name in names]
        tab = tirx.decl_buffer([iv.dom.extent for iv in ivs], expr.ty, f"{block.name_hint}_table{n}")
        idx = [iv.var for iv in ivs]
        t_ivs = [tirx.IterVar(iv.dom, iv.var, 0) for iv in ivs]
        region = point_region(tab, idx)
        t_reads = [point_region(ld.source, list(ld.indices)) for ld in loads]
        t_blk = s_tir.SBlock(t_ivs, t_reads, [region], tab.name, tirx.BufferStore(tab, expr, idx))
        nests.append((loop_nest(t_blk, t_ivs), tab))
        swap.append((expr, tirx.BufferLoad(tab, idx)))
        reads.append(region)
    body = tirx.BufferStore(store.buffer, _replace(store.value, swap), store.indices)
    still = {ld.source.name for ld in _info(body.value)[1]}  # a buffer only the table reads leaves the block's reads
    reads = [r for r in reads if r.source.name in still]
    new = s_tir.SBlock(block.iter_vars, reads, block.writes, block.name_hint, body, block.init,
                       block.alloc_buffers, block.match_buffers, block.annotations)
    return nests, new


def precompute(func: Any) -> tuple[Any, list[str]] | None:
    """The function with qualifying subexpressions moved into tables; None when there are none."""
    def rewrite(nest: Any, blk: Any):
        got = _tables(blk)
        if got is None:
            return None
        tables, new_blk = got
        return [n for n, _ in tables] + [rebuild_nest(nest, new_blk)], [t for _, t in tables]

    return rewrite_root_nests(func, rewrite)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    got = precompute(ctx.base.base_func())
    if got is None:
        return None
    func, blocks = got
    return [as_candidate(ctx, func, NAME, {"blocks": blocks},
                         f"precomputed tables: index-only transcendental terms of {', '.join(blocks)}")]
