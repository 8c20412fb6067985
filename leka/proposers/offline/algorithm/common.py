"""Shared pieces of the algorithm rewrites: a fresh schedule over the current algorithm, and the
rewritten function wrapped as a trusted algorithm layer with the rule's origin notes."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR
from leka.ir.layers import AlgorithmLayer

from ..context import RuleContext


def fresh_schedule(ctx: RuleContext) -> Any:
    from tvm import s_tir

    return s_tir.Schedule(ctx.base.base_func(), error_render_level="fast")


def as_candidate(ctx: RuleContext, func: Any, rule: str, knobs: dict[str, Any], note: str) -> CandidateIR:
    func = func.with_attr("global_symbol", "main")
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


def rewrite_root_nests(func: Any, rewrite: Any) -> tuple[Any, list[str]] | None:
    """Apply `rewrite(nest, block) -> (new nests, new buffers) | None` to every root loop nest; None when
    it changed none. The new buffers are allocated at the root. The result is printed and parsed back:
    new blocks built from an old block's iterator variables then get their own (TIR forbids a variable
    defined twice)."""
    import tvm
    from tvm import s_tir, tirx

    root = func.body.block
    stmts = list(root.body.seq) if isinstance(root.body, tirx.SeqStmt) else [root.body]
    new, allocs, done = [], list(root.alloc_buffers), []
    for st in stmts:
        blk = innermost_block(st)
        got = rewrite(st, blk) if blk is not None else None
        if got is None:
            new.append(st)
            continue
        nests, buffers = got
        new += nests
        allocs += buffers
        done.append(blk.name_hint)
    if not done:
        return None
    new_root = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, tirx.SeqStmt(new),
                            root.init, allocs, root.match_buffers, root.annotations)
    func = func.with_body(s_tir.SBlockRealize(func.body.iter_values, func.body.predicate, new_root))
    parsed = tvm.script.from_source(func.script())
    func = parsed["main"] if isinstance(parsed, tvm.IRModule) else parsed
    s_tir.Schedule(func)  # well-formed, else raises (a bug in the rewrite, not a candidate failure)
    return func, done
