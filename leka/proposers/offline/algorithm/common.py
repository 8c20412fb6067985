"""Shared pieces of the algorithm rewrites: a fresh schedule over the current algorithm, and the
rewritten function wrapped as a trusted algorithm layer with the rule's origin notes."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR
from leka.ir.layers import AlgorithmLayer, func_script

from ..context import RuleContext

# Size bound of a rewritten function's TVMScript, tighter than the parser's (script_guard.MAX_CHARS, for
# any text): a rewrite's text is parsed again in the agent's process for every summary, validation and
# flattening, and TVM's passes grow with the expression tree. Inlining stencils into stencils multiplies
# expressions (l2-harris_response: 2 kB Sobel stages became a 2 MB function); the suite's rewrites print
# to well under 100 kB.
MAX_SCRIPT_CHARS = 200_000


def check_script_size(text: str, rule: str) -> str:
    """`text` when within script_guard's limits and MAX_SCRIPT_CHARS; else ScriptRejected, one line."""
    from leka.evaluator.script_guard import ScriptRejected, check_limits

    if len(text) > MAX_SCRIPT_CHARS:
        raise ScriptRejected(f"{rule}: the rewritten function is {len(text):,} characters of TVMScript "
                             f"(limit {MAX_SCRIPT_CHARS:,}); rejected before parsing")
    check_limits(text)
    return text


def inline_fits(sch: Any, block: Any, limit: int = MAX_SCRIPT_CHARS) -> bool:
    """Whether compute_inline of `block` keeps the function under `limit` characters, estimated before TVM
    rewrites anything: every read of the block's buffer becomes a copy of its expression."""
    import re

    blk = sch.get(block)
    func_text = sch.mod["main"].script()
    uses = sum(len(re.findall(rf"\b{re.escape(w.source.name)}\[", func_text)) for w in blk.writes)
    return len(func_text) + uses * len(blk.body.script()) <= limit


def inline_bounded(sch: Any, name: str, limit: int = MAX_SCRIPT_CHARS) -> Any | None:
    """compute_inline of block `name` on a copy of `sch`: the copy when the function stays within `limit`,
    else None. Estimated before TVM runs (inline_fits) and checked after: substituted index expressions
    (padding) can grow the copies past the estimate (Harris: 58 kB estimated, 283 kB grown)."""
    if not inline_fits(sch, sch.get_sblock(name), limit):
        return None
    trial = sch.copy()
    trial.compute_inline(trial.get_sblock(name))
    return trial if len(trial.mod["main"].script()) <= limit else None


def fresh_schedule(ctx: RuleContext) -> Any:
    from tvm import s_tir

    return s_tir.Schedule(ctx.base.base_func(), error_render_level="fast")


def as_candidate(ctx: RuleContext, func: Any, rule: str, knobs: dict[str, Any], note: str) -> CandidateIR:
    """The rewritten function as a trusted algorithm layer; ScriptRejected past the size bounds (checked on
    the printed text before it is registered as trusted, hence before anything parses it)."""
    func = func.with_attr("global_symbol", "main")
    check_script_size(func_script(func), rule)
    return ctx.base.with_layer("algorithm", AlgorithmLayer.trusted(func, note)).with_notes(rule=rule, knobs=knobs)


def root_blocks(sch: Any) -> list[Any]:
    return [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]


# -- building new blocks (the rewrites that change what is computed, not only how) -------------------

def point_region(buf: Any, idx: list[Any]) -> Any:
    """The region `buf[idx]` of one element, as a block's reads/writes entry."""
    from tvm import ir, tirx

    return tirx.BufferRegion(buf, [ir.Range.from_min_extent(i, 1) for i in idx])


def loop_nest(block: Any, ivs: list[Any]) -> Any:
    """Serial loops binding the block's iterators one to one (outermost first), loop names without `v_`."""
    from tvm import s_tir, tirx

    loop_vars = [tirx.Var(iv.var.name.removeprefix("v_"), iv.var.ty) for iv in ivs]
    stmt = s_tir.SBlockRealize(loop_vars, True, block)
    for lv, iv in reversed(list(zip(loop_vars, ivs))):
        stmt = tirx.For(lv, 0, iv.dom.extent, tirx.ForKind.SERIAL, stmt)
    return stmt


def innermost_block(stmt: Any) -> Any | None:
    """The block at the bottom of a perfect loop nest; None for anything else."""
    from tvm import s_tir, tirx

    while isinstance(stmt, tirx.For):
        stmt = stmt.body
    return stmt.block if isinstance(stmt, s_tir.SBlockRealize) else None


def rebuild_nest(stmt: Any, new_block: Any) -> Any:
    """The perfect loop nest `stmt` with its innermost block replaced by `new_block`."""
    from tvm import s_tir, tirx

    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, rebuild_nest(stmt.body, new_block),
                        stmt.thread_binding, stmt.annotations)
    return s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, new_block)


def rewrite_root_nests(func: Any, rewrite: Any) -> tuple[Any, list[str]] | None:
    """Apply `rewrite(nest, block) -> (new nests, new buffers) | None` to every root loop nest; None when
    it changed none. The new buffers are allocated at the root. The result is printed and parsed back:
    new blocks built from an old block's iterator variables then get their own (TIR forbids a variable
    defined twice)."""
    import tvm
    from tvm import s_tir, tirx

    from leka.evaluator.safe_parse import trusted_from_source
    from leka.evaluator.script_guard import ScriptRejected

    root = func.body.block
    stmts = list(root.body.seq) if isinstance(root.body, tirx.SeqStmt) else [root.body]
    new, allocs, done = [], list(root.alloc_buffers), []
    for st in stmts:
        blk = innermost_block(st)
        if blk is None or (got := rewrite(st, blk)) is None:
            new.append(st)
            continue
        nests, buffers = got
        new += nests
        allocs += buffers
        done.append(blk.name_hint)
    if not done:
        return None
    body = new[0] if len(new) == 1 else tirx.SeqStmt(new)
    new_root = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, body,
                            root.init, allocs, root.match_buffers, root.annotations)
    func = func.with_body(s_tir.SBlockRealize(func.body.iter_values, func.body.predicate, new_root))
    try:
        parsed = trusted_from_source(check_script_size(func.script(), "algorithm rewrite"))
    except ScriptRejected:  # the rewritten IR grew past the parser's size bounds: no rewrite
        return None
    func = parsed["main"] if isinstance(parsed, tvm.IRModule) else parsed
    s_tir.Schedule(func)  # well-formed, else raises (a bug in the rewrite, not a candidate failure)
    return func, done


BINARY_NODES = ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT",
           "GE", "And", "Or")


def map_expr(e: Any, post: Any) -> Any:
    """Rebuild expression `e` bottom-up: children first, then `post(node) -> replacement | None`.
    Covers arithmetic, comparisons, casts, selects and calls; other nodes are left as they are."""
    from tvm import ir, tirx

    kind = type(e).__name__
    new = e
    if kind in BINARY_NODES:
        a, b = map_expr(e.a, post), map_expr(e.b, post)
        new = e if (a.same_as(e.a) and b.same_as(e.b)) else type(e)(a, b)
    elif kind == "Not":
        a = map_expr(e.a, post)
        new = e if a.same_as(e.a) else tirx.Not(a)
    elif isinstance(e, tirx.Cast):
        v = map_expr(e.value, post)
        new = e if v.same_as(e.value) else tirx.Cast(e.ty, v)
    elif kind == "Select":
        c, t, f = (map_expr(x, post) for x in (e.condition, e.true_value, e.false_value))
        same = c.same_as(e.condition) and t.same_as(e.true_value) and f.same_as(e.false_value)
        new = e if same else tirx.Select(c, t, f)
    elif isinstance(e, ir.expr.Call) and not isinstance(e, ir.expr.TensorLoad):
        args = [map_expr(a, post) for a in e.args]
        new = e if all(a.same_as(b) for a, b in zip(args, e.args)) else ir.expr.Call(e.op, args, ret_ty=e.ty)
    got = post(new)
    return new if got is None else got
