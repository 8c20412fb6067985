"""Separable window reduction: a sum/max/min over a ky x kx window whose row offset only moves one index of
the input and whose column offset only moves another (box and mean filters, adaptive thresholds,
dilation/erosion, pooling) costs ky*kx per output. Reduce along the columns first into an intermediate
over every input row (H[.., u, x] = reduce_rx g(X[.., u, col(x, rx)])), then along the rows
(Y[.., y, x] = reduce_ry H[.., row(y, ry), x]): kx + ky per output. Exact for integer sums, max and min;
float sums are re-associated (the evaluator re-verifies against the reference as always).

Taken only when the two-pass count is clearly smaller (strided pooling windows that barely overlap are
left alone) and the body is g(X[...]) with g a chain of casts (weights per tap are not separable)."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR

from ..context import RuleContext
from .common import as_candidate, loop_nest, point_region, rewrite_root_nests

NAME = "alg.separable_window"
MIN_GAIN = 1.33  # original taps / two-pass taps below which the extra pass and buffer do not pay


def _vars(expr: Any) -> set[str]:
    from tvm.tirx.analysis import undefined_vars

    return {v.name for v in undefined_vars(expr)}


def _combiner(block: Any):
    """(op class, the block's own load, value) for `buf[w] = op(buf[w], value)`; None otherwise."""
    from tvm import ir, tirx

    st = block.body
    if not isinstance(st, tirx.BufferStore) or not isinstance(st.value, (tirx.Add, tirx.Max, tirx.Min)):
        return None
    a, b = st.value.a, st.value.b
    for own, val in ((a, b), (b, a)):
        if isinstance(own, ir.expr.TensorLoad) and own.source.same_as(st.buffer) and \
                all(x.same_as(y) for x, y in zip(own.indices, st.indices)):
            return type(st.value), val
    return None


def _load_through_casts(value: Any):
    """The buffer load under a chain of casts, with the cast dtypes (outermost first)."""
    from tvm import ir, tirx

    casts = []
    while isinstance(value, tirx.Cast):
        casts.append(value.ty)
        value = value.value
    return (value, casts) if isinstance(value, ir.expr.TensorLoad) else (None, casts)


def _plan(block: Any) -> dict | None:
    """Which load index carries the row window and which the column window; None when not separable."""
    from tvm import tirx

    ivs = list(block.iter_vars)
    sp = [iv for iv in ivs if int(iv.iter_type) == 0]
    rd = [iv for iv in ivs if int(iv.iter_type) == 2]
    if len(rd) != 2 or len(sp) + len(rd) != len(ivs) or block.init is None:
        return None
    comb = _combiner(block)
    if comb is None:
        return None
    op, value = comb
    load, casts = _load_through_casts(value)
    if load is None:
        return None
    store = block.body
    if not all(isinstance(i, tirx.Var) for i in store.indices):
        return None
    dims = {}
    for r in rd:
        using = [d for d, e in enumerate(load.indices) if r.var.name in _vars(e)]
        if len(using) != 1:
            return None
        dims[r.var.name] = using[0]
    d_row, d_col = dims[rd[0].var.name], dims[rd[1].var.name]
    if d_row == d_col:
        return None
    row_vars = _vars(load.indices[d_row]) - {rd[0].var.name}
    if len(row_vars) != 1:
        return None
    v_row = next(iv for iv in sp if iv.var.name in row_vars)
    # the output row iterator moves the row index only, and indexes the output directly
    if any(v_row.var.name in _vars(e) for d, e in enumerate(load.indices) if d != d_row):
        return None
    out_dims = [d for d, i in enumerate(store.indices) if i.name == v_row.var.name]
    if len(out_dims) != 1:
        return None
    return {"op": op, "load": load, "casts": casts, "r_row": rd[0], "r_col": rd[1], "d_row": d_row,
            "v_row": v_row, "out_dim": out_dims[0], "spatial": sp}


def _split(block: Any, p: dict):
    """(column pass nest, row pass nest, intermediate buffer)."""
    from tvm import ir, s_tir, tirx

    X, out = p["load"].source, block.body.buffer
    rows = X.shape[p["d_row"]]
    shape = list(out.shape)
    shape[p["out_dim"]] = rows
    H = tirx.decl_buffer(shape, out.dtype, f"{out.name}_cols")
    u = tirx.IterVar(ir.Range.from_min_extent(0, rows), tirx.Var(p["v_row"].var.name + "_in", "int32"), 0)
    sp1 = [u if iv.same_as(p["v_row"]) else iv for iv in p["spatial"]]
    h_idx = [u.var if i.name == p["v_row"].var.name else i for i in block.body.indices]
    x_idx = list(p["load"].indices)
    x_idx[p["d_row"]] = u.var
    val: Any = tirx.BufferLoad(X, x_idx)
    for dt in reversed(p["casts"]):
        val = tirx.Cast(dt, val)
    op = p["op"]
    init1 = tirx.BufferStore(H, block.init.value, h_idx)
    body1 = tirx.BufferStore(H, op(tirx.BufferLoad(H, h_idx), val), h_idx)
    cols = s_tir.SBlock(sp1 + [p["r_col"]], [point_region(X, x_idx)], [point_region(H, h_idx)], f"{block.name_hint}_cols", body1, init1)
    r_idx = list(block.body.indices)
    r_idx[p["out_dim"]] = p["load"].indices[p["d_row"]]
    out_idx = list(block.body.indices)
    body2 = tirx.BufferStore(out, op(tirx.BufferLoad(out, out_idx), tirx.BufferLoad(H, r_idx)), out_idx)
    rows_blk = s_tir.SBlock(p["spatial"] + [p["r_row"]], [point_region(H, r_idx)], list(block.writes), block.name_hint, body2,
                            block.init, block.alloc_buffers, block.match_buffers, block.annotations)
    return loop_nest(cols, sp1 + [p["r_col"]]), loop_nest(rows_blk, p["spatial"] + [p["r_row"]]), H


def _taps(block: Any, p: dict) -> tuple[int, int]:
    """(original taps, two-pass taps) over the whole output."""
    ext = {iv.var.name: int(iv.dom.extent) for iv in block.iter_vars}
    out = 1
    for iv in p["spatial"]:
        out *= ext[iv.var.name]
    ky, kx = ext[p["r_row"].var.name], ext[p["r_col"].var.name]
    rows = int(p["load"].source.shape[p["d_row"]])
    return out * ky * kx, out // ext[p["v_row"].var.name] * rows * kx + out * ky


def separate(func: Any) -> tuple[Any, list[str]] | None:
    """The function with every separable window reduction split in two passes; None when none is."""
    def rewrite(nest: Any, blk: Any):
        p = _plan(blk)
        if p is None:
            return None
        old, two = _taps(blk, p)
        if old < MIN_GAIN * two:
            return None
        cols, rows, H = _split(blk, p)
        return [cols, rows], [H]

    return rewrite_root_nests(func, rewrite)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if not any(b.is_reduction and len(b.reduce) == 2 for b in ctx.infos):
        return None
    got = separate(ctx.base.base_func())
    if got is None:
        return None
    func, blocks = got
    return [as_candidate(ctx, func, NAME, {"blocks": blocks},
                         f"separable window: {', '.join(blocks)} reduced along columns, then rows")]
