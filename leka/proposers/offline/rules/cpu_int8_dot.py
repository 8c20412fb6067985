"""int8 GEMM-like reductions on x86 CPUs with AVX-512 VNNI: vpdpbusd (u8 x s8, four products summed into
each of 16 int32 lanes) through a tensor intrinsic (leka.ir.vnni; TVM's own `dot_16x4_vnni` fails LLVM 22's
verifier).

The suite's int8 kernels are s8 x s8 (activations often with a zero point, `(x + c) * w`), so the algorithm
layer rewrites the reduction: the activation is shifted to u8 (x + 128, a per-call copy), the weights are
packed inside the kernel into [N/16, K/4, 16, 4] (zero-padded when N is not a multiple of 16, the
accumulator padded too; the packing block is marked a layout rewrite, so in a model, where the weights are
constants, it runs once at build time: leka/optimize/prepack.py), and the offset is applied after the reduction:
sum((x + c) * w) = sum((x + 128) * w) + (c - 128) * sum(w), the column sums computed per call (by the same
instruction, against u8 ones). The schedule tensorises 16 output lanes x 4 reduce steps under a register tile
of rows x output vectors. Declined: one-row (GEMV-like) reductions, where packing the weights per call costs
more than it saves; reductions shorter than MIN_K; more than one reduce iterator of extent > 1 (3x3
convolutions); uint8 weights; batched operands (the weights depend on an output iterator besides N)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leka.ir import CandidateIR, IRApplyError
from leka.ir.vnni import VNNI_DOT

from ..algorithm.common import as_candidate, loop_nest, map_expr, point_region, rewrite_root_nests
from ..analysis import analyze
from ..context import RuleContext
from ..cpu_plan import inline_intermediates, lanes_for, parallel_outer, schedule_rest
from ..prepack_mark import mark_weight_prepack

NAME = "cpu.int8_dot"
INTRIN = VNNI_DOT
LANES, KSTEP = 16, 4
# LLVM CPU names with AVX-512 VNNI (mattr "+avx512vnni" also counts); Arm sdot is not handled here
VNNI_CPUS = ("cascadelake", "cooperlake", "icelake-client", "icelake-server", "tigerlake", "rocketlake",
             "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids", "znver4",
             "znver5")
# register tiles: output vectors x rows per reduce step (rows: the largest divisor of the row loop up to it)
TILES = ({"reg": 1, "rows": 8}, {"reg": 2, "rows": 8}, {"reg": 4, "rows": 4}, {"reg": 2, "rows": 4},
         {"reg": 4, "rows": 1})
# rows of the activation operand below which packing the weights per call costs more than the dot products
# save (GEMV-like, M = 1: 0.35-1.5x against the other rules' 1.3-2.1x, measured)
MIN_ROWS = 16
# reduce length below which the u8 copy of the activations and the fix-up pass outweigh the dot products
# (1x1 conv 48x48x8x16, K = 8: 3.3x against the other rules' 7.0x over naive, measured)
MIN_K = 32


def has_vnni(target: dict[str, Any]) -> bool:
    if target.get("kind") != "llvm" or not str(target.get("mtriple", "x86_64")).startswith("x86_64"):
        return False
    mattr = target.get("mattr") or []
    return str(target.get("mcpu", "")) in VNNI_CPUS or "+avx512vnni" in mattr


@dataclass
class Match:
    block: Any  # the reduction SBlock
    a: Any  # BufferLoad of the broadcast operand (int8, does not use j)
    b: Any  # BufferLoad of the weight operand (int8, uses j and k only)
    offset: int  # c in (a + c) * b
    j: Any  # IterVar: innermost spatial (the output's last index)
    k: Any  # IterVar: the one reduce iterator of extent > 1


def _operand(e: Any) -> tuple[Any, int] | None:
    """(load, c) for cast(int32, int8 load) [+/- constant]; None otherwise."""
    from tvm import ir, tirx

    off = 0
    if type(e).__name__ in ("Add", "Sub") and isinstance(e.b, tirx.IntImm):
        off, e = (int(e.b.value) if type(e).__name__ == "Add" else -int(e.b.value)), e.a
    if isinstance(e, tirx.Cast) and str(e.ty) == "int32" and isinstance(e.value, ir.expr.TensorLoad) \
            and str(e.value.source.dtype) == "int8":
        return e.value, off
    return None


def _uses(e: Any, var: Any) -> bool:
    found = []
    map_expr(e, lambda n: found.append(n) if n.same_as(var) else None)
    return bool(found)


def match(block: Any) -> Match | None:
    """The int8 x int8 -> int32 GEMM-like reduction pattern the intrinsic covers; None otherwise."""
    from tvm import ir, tirx

    store, init = block.body, block.init
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int32" or init is None \
            or not isinstance(init.value, tirx.IntImm) or int(init.value.value) != 0:
        return None
    val = store.value
    if type(val).__name__ != "Add" or not isinstance(val.a, ir.expr.TensorLoad) or type(val.b).__name__ != "Mul":
        return None
    reduce = [iv for iv in block.iter_vars if int(iv.iter_type) == 2]
    long = [iv for iv in reduce if int(iv.dom.extent) > 1]
    spatial = [iv for iv in block.iter_vars if int(iv.iter_type) == 0]
    if len(long) != 1 or not spatial or not store.indices[-1].same_as(spatial[-1].var):
        return None
    j, k = spatial[-1], long[0]
    left, right = _operand(val.b.a), _operand(val.b.b)
    if left is None or right is None:
        return None
    ops = [left, right]
    for (a, off), (b, boff) in (ops, ops[::-1]):
        if boff != 0 or any(_uses(i, j.var) for i in a.indices) or not any(_uses(i, k.var) for i in a.indices):
            continue
        others = [iv.var for iv in spatial[:-1]]
        if any(_uses(i, v) for i in b.indices for v in others) or not any(_uses(i, j.var) for i in b.indices):
            continue
        return Match(block, a, b, off, j, k)
    return None


def _rows(m: Match) -> int:
    """Output rows that share the packed weights: the spatial iterations besides the vector one."""
    n = 1
    for iv in m.block.iter_vars:
        if int(iv.iter_type) == 0 and not iv.same_as(m.j):
            n *= int(iv.dom.extent)
    return n


def _subst(e: Any, mapping: list[tuple[Any, Any]]) -> Any:
    return map_expr(e, lambda n: next((new for old, new in mapping if n.same_as(old)), None))


def _b_at(m: Match, jv: Any, kv: Any, n: int) -> Any:
    """The weight at (j, k) = (jv, kv), unit reduce iterators at 0, zero past the N valid columns."""
    from tvm import tirx

    units = [(iv.var, tirx.IntImm("int32", 0)) for iv in m.block.iter_vars
             if int(iv.iter_type) == 2 and not iv.same_as(m.k)]
    idx = [_subst(i, [(m.j.var, jv), (m.k.var, kv)] + units) for i in m.b.indices]
    v = tirx.Cast("int32", tirx.BufferLoad(m.b.source, idx))
    return v if n % LANES == 0 else tirx.if_then_else(jv < n, v, tirx.IntImm("int32", 0))


def _iv(name: str, extent: int, reduce: bool = False) -> Any:
    from tvm import ir, tirx

    return tirx.IterVar(ir.Range.from_min_extent(0, extent), tirx.Var(name, "int32"), 2 if reduce else 0)


def _block(name: str, ivs: list[Any], reads: list[Any], store: Any, init: Any = None) -> Any:
    from tvm import s_tir

    w = point_region(store.buffer, list(store.indices))
    return loop_nest(s_tir.SBlock(ivs, reads, [w], name, store, init), ivs)


def _prologue(m: Match, n: int, npad: int) -> tuple[list[Any], list[Any]]:
    """(nests, [A_u8, B_pack, B_sum, ones]): the u8 activation copy, the packed weights, the weight column
    sums (a dot of the packed weights with u8 ones, tensorised like the main reduction)."""
    from tvm import tirx

    g, A, kx = m.block.name_hint, m.a.source, int(m.k.dom.extent)
    au = tirx.decl_buffer(A.shape, "uint8", f"{g}_a_u8")
    bp = tirx.decl_buffer((npad // LANES, kx // KSTEP, LANES, KSTEP), "int8", f"{g}_b_pack")
    ws = tirx.decl_buffer((npad,), "int32", f"{g}_b_sum")
    a_ivs = [_iv(f"a{d}", int(s)) for d, s in enumerate(A.shape)]
    a_idx = [iv.var for iv in a_ivs]
    shifted = tirx.Cast("uint8", tirx.Cast("int32", tirx.BufferLoad(A, a_idx)) + tirx.IntImm("int32", 128))
    nests = [_block(f"{g}_a_u8", a_ivs, [point_region(A, a_idx)], tirx.BufferStore(au, shifted, a_idx))]
    p_ivs = [_iv("jo", npad // LANES), _iv("ko", kx // KSTEP), _iv("ji", LANES), _iv("ki", KSTEP)]
    jo, ko, ji, ki = (iv.var for iv in p_ivs)
    bj, bk = jo * LANES + ji, ko * KSTEP + ki
    b_reads = [tirx.BufferRegion(m.b.source, [_full(s) for s in m.b.source.shape])]
    nests.append(_block(f"{g}_b_pack", p_ivs, b_reads,
                        tirx.BufferStore(bp, tirx.Cast("int8", _b_at(m, bj, bk, n)), [jo, ko, ji, ki])))
    # column sums by the same instruction: ones (u8) . packed weights, 1/64 of a pass over them
    ones = tirx.decl_buffer((kx,), "uint8", f"{g}_ones")
    o_iv = _iv("k", kx)
    nests.append(_block(f"{g}_ones", [o_iv], [], tirx.BufferStore(ones, tirx.IntImm("uint8", 1), [o_iv.var])))
    s_ivs = [_iv("j", npad), _iv("k", kx, reduce=True)]
    sj, sk_ = (iv.var for iv in s_ivs)
    p_idx = [sj // LANES, sk_ // KSTEP, sj % LANES, sk_ % KSTEP]
    init = tirx.BufferStore(ws, tirx.IntImm("int32", 0), [sj])
    prod = tirx.Cast("int32", tirx.BufferLoad(ones, [sk_])) * tirx.Cast("int32", tirx.BufferLoad(bp, p_idx))
    upd = tirx.BufferStore(ws, tirx.BufferLoad(ws, [sj]) + prod, [sj])
    nests.append(_block(f"{g}_b_sum", s_ivs, [point_region(ones, [sk_]), point_region(bp, p_idx)], upd, init))
    return nests, [au, bp, ws, ones]


def _full(extent: Any) -> Any:
    from tvm import ir

    return ir.Range.from_min_extent(0, extent)


def _reduction(m: Match, n: int, npad: int, au: Any, bp: Any, ws: Any) -> tuple[list[Any], Any]:
    """(nests, accumulator): the reduction over u8 x packed s8 into a new accumulator (N padded to npad),
    then `<block>_fix` writes the original one: + (c - 128) * column sum. (Folding that into the init
    would make the tensorised update read the sums too, which the intrinsic's description does not.)"""
    from tvm import s_tir, tirx

    blk, store = m.block, m.block.body
    c = store.buffer
    acc = tirx.decl_buffer(list(c.shape[:-1]) + [npad], "int32", f"{c.name}_dot")
    ivs = [_iv(iv.var.name, npad) if iv.same_as(m.j) else iv for iv in blk.iter_vars]
    jv, kv = ivs[list(blk.iter_vars).index(m.j)].var, m.k.var
    idx = [_subst(i, [(m.j.var, jv)]) for i in store.indices]
    b_idx = [jv // LANES, kv // KSTEP, jv % LANES, kv % KSTEP]
    prod = tirx.Cast("int32", tirx.BufferLoad(au, list(m.a.indices))) * tirx.Cast("int32", tirx.BufferLoad(bp, b_idx))
    body = tirx.BufferStore(acc, tirx.BufferLoad(acc, idx) + prod, idx)
    init = tirx.BufferStore(acc, tirx.IntImm("int32", 0), idx)
    reads = [point_region(au, list(m.a.indices)), point_region(bp, b_idx)]
    new = s_tir.SBlock(ivs, reads, [point_region(acc, idx)], blk.name_hint, body, init)
    out_ivs = [_iv(f"c{d}", int(s)) for d, s in enumerate(c.shape)]
    o_idx = [iv.var for iv in out_ivs]
    fixed = tirx.BufferLoad(acc, o_idx) + tirx.IntImm("int32", m.offset - 128) * tirx.BufferLoad(ws, o_idx[-1:])
    fix = _block(f"{blk.name_hint}_fix", out_ivs, [point_region(acc, o_idx), point_region(ws, o_idx[-1:])],
                 tirx.BufferStore(c, fixed, o_idx))
    return [loop_nest(new, ivs), fix], acc


def rewrite(func: Any) -> tuple[Any, str] | None:
    """(function, reduction block name) with the one int8 dot reduction rewritten for the intrinsic."""
    found: list[str] = []

    def one(nest: Any, blk: Any):
        m = match(blk) if not found else None
        if m is None or int(m.k.dom.extent) % KSTEP or int(m.k.dom.extent) < MIN_K or _rows(m) < MIN_ROWS:
            return None
        n = int(m.j.dom.extent)
        npad = -(-n // LANES) * LANES
        pro, bufs = _prologue(m, n, npad)
        red, acc = _reduction(m, n, npad, *bufs[:3])
        found.append(blk.name_hint)
        return pro + red, bufs + [acc]

    got = rewrite_root_nests(func, one)
    return (got[0], found[0]) if got else None


def _schedule_dot(sk: Any, info: Any, cores: int, reg: int, rows: int) -> bool:
    """16 output lanes x 4 reduce steps tensorised; a register tile of `rows` output rows x `reg` output
    vectors per reduce step (unrolled: a broadcast activation word serves `reg` vectors, a weight vector
    `rows` rows); outer loops parallel; the zero init hoisted out of the reduction."""
    pairs = list(zip(info.loops, info.kinds, info.extents))
    sp = [lp for lp, kd, _ in pairs if kd == "S"]
    k = next(lp for lp, kd, e in pairs if kd == "R" and e > 1)
    units = [lp for lp, kd, e in pairs if kd == "R" and e == 1]
    if sk.extent(sp[-1]) // LANES % reg:
        return False
    jo, ji = sk.do("split", loop=sp[-1], factors=[None, LANES])
    jr = sk.do("split", loop=jo, factors=[None, reg]) if reg > 1 else [jo]
    ko, ki = sk.do("split", loop=k, factors=[None, KSTEP])
    outer, tile = sp[:-1], []
    rows = max((r for r in range(1, rows + 1) if len(sp) > 1 and sk.extent(sp[-2]) % r == 0), default=1)
    if rows > 1:
        io, ii = sk.do("split", loop=sp[-2], factors=[None, rows])
        outer, tile = sp[:-2] + [io], [ii]
    sk.do("reorder", loops=outer + jr[:1] + units + [ko] + tile + jr[1:] + [ji, ki])
    parallel_outer(sk, outer + jr[:1], cores)  # before tensorize: TVM refuses it on the tensorised block
    init = sk.do("decompose_reduction", block=info.name, loop=(units or [ko])[0])[0]
    sk.do("vectorize", loop=sk.loops(init)[-1])
    sk.do("tensorize", target=ji, intrin=INTRIN)
    for lp in tile + jr[1:]:
        sk.do("unroll", loop=lp)
    return True


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu" or not has_vnni(ctx.target):
        return None
    if not any(b.is_reduction and b.dtype == "int32" and b.reuse for b in ctx.infos):
        return None
    got = rewrite(ctx.base.base_func())
    if got is None:
        return None
    func, g = got
    start = as_candidate(ctx, func, NAME, {}, f"{g}: u8 x s8 dot products (VNNI), weights packed 16x4 per call")
    outputs = {a.name for a in ctx.task.outputs}
    infos = analyze(start.apply(), outputs)
    main, sums = (next(b for b in infos if b.name == name) for name in (g, f"{g}_b_sum"))
    mine = {g, f"{g}_a_u8", f"{g}_b_pack", f"{g}_b_sum", f"{g}_ones"}
    out = []
    for kn in TILES:
        def build(sk: Any, kn: dict = kn) -> None:
            if not _schedule_dot(sk, main, ctx.cores, kn["reg"], kn["rows"]):
                raise IRApplyError(f"{kn['reg']} vectors do not divide the output")
            _schedule_dot(sk, sums, ctx.cores, 1, 1)
            done = set(inline_intermediates(sk, [b for b in infos if b.name not in mine]))
            schedule_rest(sk, infos, done | {g, sums.name}, lambda b: lanes_for(ctx.facts, b.dtype_bits), ctx.cores,
                          rfactor=False)
            mark_weight_prepack(sk, f"{g}_b_pack")  # in a model: packed once at build time (optimize/prepack.py)
        ir = ctx.attempt(NAME, dict(kn), build, start=start)
        if ir is not None:
            out.append(ir)
    return out or None
