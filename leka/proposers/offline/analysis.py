"""What the offline rules look at: the blocks of a task's PrimFunc (iterators, extents, accesses)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BlockInfo:
    name: str
    loops: tuple[str, ...]  # stable loop names, outermost first
    extents: tuple[int, ...]
    kinds: tuple[str, ...]  # "S" spatial / "R" reduction, per loop (te-built nests: loop n binds iter n)
    writes_output: bool
    has_condition: bool  # if_then_else in the body (padding): inlining it puts a branch in the vector loop
    inner_contiguous: bool  # the innermost spatial iterator is the last index of every access that uses it
    reduce_contiguous: bool  # the innermost reduction iterator is the last index of every read that uses it
    dtype_bits: int
    dtype: str = "float32"
    # a read ignores some spatial iterator of extent > 1: an operand reused across outputs (GEMM, conv,
    # attention), as opposed to a row reduction whose every read walks all the output's iterators
    reuse: bool = False
    transcendental: bool = False  # calls exp, log, sqrt, sin ... (libm calls on CPU)
    # a range test on a spatial iterator (v_y < 2, t - k >= 0): padding written into the body, which
    # loop partitioning removes from the interior; a guard on reduce iterators only is not one
    border_condition: bool = False

    @property
    def iterations(self) -> int:
        n = 1
        for e in self.extents:
            n *= e
        return n

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith(("float", "bfloat"))

    @property
    def spatial(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == "S"]

    @property
    def reduce(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == "R"]

    @property
    def is_ordered(self) -> bool:
        """Has a scan/opaque iterator: TVM keeps the whole block serial."""
        return "O" in self.kinds

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce)


TABLE_REUSE = 4  # a costly stage this many times smaller than the largest is a table, not a fusion candidate


def keep_as_table(b: BlockInfo, infos: list[BlockInfo]) -> bool:
    """A transcendental stage over far fewer iterations than a later stage (a per-feature 1/sqrt, a twiddle
    table): inlining it would evaluate it once per consumer iteration again. Only later stages can consume
    it: a batch-norm epilogue after a conv (its sqrt per output element, read once each) is no table."""
    later = [x.iterations for x in infos[infos.index(b) + 1:]]
    return b.transcendental and bool(later) and b.iterations * TABLE_REUSE <= max(later)


def _uses(expr: Any, var: str) -> bool:
    from tvm.tirx.analysis import undefined_vars

    return any(v.name == var for v in undefined_vars(expr))


def uses_outside_groups(expr: Any, var: str, min_div: int = 4) -> bool:
    """`var` occurs in `expr` other than inside a floordiv by a constant >= min_div: a grouped convolution
    reads its input channel as (co // per_group) * ci_per_group + rc, which a tile of output channels inside
    one group does not move, unlike a depthwise one's co."""
    import tvm

    if isinstance(expr, tvm.tirx.Var):
        return bool(expr.name == var)
    if isinstance(expr, tvm.tirx.FloorDiv) and isinstance(expr.b, tvm.tirx.IntImm) and expr.b.value >= min_div:
        return False
    if isinstance(expr, (tvm.tirx.Add, tvm.tirx.Sub, tvm.tirx.Mul, tvm.tirx.FloorDiv, tvm.tirx.FloorMod)):
        return uses_outside_groups(expr.a, var, min_div) or uses_outside_groups(expr.b, var, min_div)
    if isinstance(expr, tvm.tirx.Cast):
        return uses_outside_groups(expr.value, var, min_div)
    return _uses(expr, var)  # any other node: every occurrence counts


def _last_index_only(regions: Any, var: str) -> bool:
    for reg in regions:
        uses = [i for i, r in enumerate(reg.region) if _uses(r.min, var)]
        if uses and uses != [len(reg.region) - 1]:
            return False
    return True


TRANSCENDENTAL = {"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh",
                  "tanh", "asin", "acos", "atan", "atan2", "pow", "sqrt", "rsqrt", "erf", "sigmoid", "hypot"}
_TRANSCENDENTAL_CALL = re.compile(rf"T\.({'|'.join(sorted(TRANSCENDENTAL))})\(")


_COMPARISON = re.compile(r"([\w.() +\-*]+?)\s(?:<=|>=|<|>)\s([\w.() +\-*]+)")


def _border_condition(body: str, spatial_vars: list[str]) -> bool:
    names = set(spatial_vars)
    return any(names & set(re.findall(r"\w+", a + " " + b)) for a, b in _COMPARISON.findall(body))


def _buffer_dtypes(live: Any) -> dict[str, str]:
    func = live.sch.mod["main"]
    out = {p.name: str(p.dtype) for p in func.params}
    root = live.sch.get(live.sch.get_sblock("root"))
    out.update({b.name: str(b.dtype) for b in root.alloc_buffers})
    return out


def _allocated(live: Any) -> set[str]:
    root = live.sch.get(live.sch.get_sblock("root"))
    return {b.name for b in root.alloc_buffers}


def analyze(live: Any, output_names: set[str]) -> list[BlockInfo]:
    """Per block; a block writes an output when it writes one of `output_names` or a buffer the function
    does not allocate (a parameter: a chained task's output buffer is named after its last op, relu3, not
    after the task's output, Y)."""
    infos = []
    dtypes = _buffer_dtypes(live)
    allocated = _allocated(live)
    for name in live.block_names():
        blk = live.sch.get(live.sch.get_sblock(name))
        loops = live.loops_of(name)
        rvs = live.sch.get_loops(live.sch.get_sblock(name))
        extents = tuple(int(live.sch.get(rv).extent) for rv in rvs)
        ivs = list(blk.iter_vars)
        if len(ivs) != len(loops):  # not a perfect te-style nest: treat conservatively
            kinds = tuple("R" if live.reducing_blocks(n) else "S" for n in loops)
        else:
            # "S" data-parallel, "R" commutative reduction, "O" anything ordered (scan, opaque): serial
            kinds = tuple({0: "S", 2: "R"}.get(int(iv.iter_type), "O") for iv in ivs)
        sp = [i for i, k in enumerate(kinds) if k == "S"]
        rd = [i for i, k in enumerate(kinds) if k == "R"]
        inner_ok = bool(sp) and len(ivs) == len(loops) and _last_index_only(
            list(blk.reads) + list(blk.writes), ivs[sp[-1]].var.name)
        red_ok = bool(rd) and len(ivs) == len(loops) and _last_index_only(list(blk.reads), ivs[rd[-1]].var.name)
        reuse = len(ivs) == len(loops) and bool(rd) and any(
            any(extents[i] > 1 and not any(_uses(r.min, ivs[i].var.name) for r in reg.region) for i in sp)
            for reg in blk.reads)
        writes = {w.source.name for w in blk.writes}
        dtype = next((dtypes[w] for w in writes if w in dtypes), "float32")
        bits = int(re.sub(r"\D", "", dtype) or 32)
        body = str(blk.body)
        cond = "if_then_else" in body
        infos.append(BlockInfo(name, tuple(loops), extents, kinds, bool(writes & output_names or writes - allocated),
                               cond, inner_ok, red_ok, bits, dtype, reuse,
                               bool(_TRANSCENDENTAL_CALL.search(body)),
                               cond and len(ivs) == len(loops) and _border_condition(body, [ivs[i].var.name for i in sp])))
    return infos
