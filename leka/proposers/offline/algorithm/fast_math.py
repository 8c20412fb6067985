"""Fast math: exp, tanh, sigmoid and erf as polynomial / rational approximations built from plain arithmetic
(TVM's FastMath idea, written out here as TIR expressions). LLVM lowers `exp` and `tanh` to scalar libm
calls, so a loop holding one is never vectorised and pays a call per element; the approximations
vectorise like any arithmetic. Softmax, attention pooling, bilateral range weights and Gaussian
likelihoods are dominated by these calls once their arithmetic is scheduled, and so is the Erf-GELU
epilogue of a transformer's feed-forward GEMM (erff per element).

Accuracy: exp is range-reduced (x = n ln2 + f) with a degree-7 polynomial in f, relative error ~1e-7
(float32 rounding level), 0 below e^-88; tanh is Eigen's [13/6] rational form on [-9, 9], a few ulp;
erf is Eigen's [13/8] rational form on [-4, 4] (TVM's topi fast_erf), a few ulp.
float16 calls are evaluated in float32. The rewrite is a candidate like any other: the evaluator checks it
against the task's reference on every input distribution, the heavy-tailed one included."""
from __future__ import annotations

from typing import Any

from leka.ir import CandidateIR

from ..context import RuleContext
from .common import as_candidate, map_expr, rebuild_nest, rewrite_root_nests

NAME = "alg.fast_math"
FUNCS = ("exp", "tanh", "sigmoid", "erf")
# exp: Cephes expf coefficients, as in TVM's topi fast_exp
_EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
# tanh: Eigen's generic_fast_tanh_float
_TANH_A = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
           1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
_TANH_B = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
# erf: Eigen's generic_fast_erf_float (odd numerator in x, even denominator), highest degree first
_ERF_A = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_B = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def _f(v: float) -> Any:
    from tvm import tirx

    return tirx.const(v, "float32")


def _horner(x: Any, coeffs: tuple[float, ...]) -> Any:
    acc = _f(coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + _f(c)
    return acc


def _let(name: str, value: Any, body: Any) -> Any:
    """`body(v)` with `v` bound to `value` once (the polynomial uses its argument many times). Each call
    makes a new variable; the printer tells same-named ones apart (fm_x, fm_x_1, ...)."""
    from tvm import tirx

    v = tirx.Var(name, "float32")
    return tirx.Let(v, value, body(v))


def fast_exp(x: Any) -> Any:
    """e^x for a float32 expression, from arithmetic, floor and a bit cast only."""
    from tvm import tirx

    def with_n(xc: Any, n: Any) -> Any:
        def with_f(f: Any) -> Any:
            two_n = tirx.reinterpret("float32", tirx.shift_left(tirx.Cast("int32", n) + tirx.const(127, "int32"),
                                                                tirx.const(23, "int32")))
            return two_n * (_horner(f, _EXP_P) * f * f + f + _f(1.0))

        return _let("fm_f", xc - n * _f(0.693359375) - n * _f(-2.12194440e-4), with_f)  # ln 2 in two parts

    clamped = tirx.max(tirx.min(x, _f(88.3762626647950)), _f(-88.3762626647949))
    return _let("fm_x", clamped, lambda xc: _let("fm_n", tirx.floor(xc * _f(1.44269504088896341) + _f(0.5)),
                                                 lambda n: with_n(xc, n)))


def fast_tanh(x: Any) -> Any:
    from tvm import tirx

    def body(xc: Any) -> Any:
        return _let("fm_x2", xc * xc, lambda x2: xc * _horner(x2, _TANH_A) / _horner(x2, _TANH_B))

    return _let("fm_t", tirx.max(tirx.min(x, _f(9.0)), _f(-9.0)), body)


def fast_erf(x: Any) -> Any:
    from tvm import tirx

    def body(xc: Any) -> Any:
        return _let("fm_x2", xc * xc, lambda x2: xc * _horner(x2, _ERF_A) / _horner(x2, _ERF_B))

    return _let("fm_e", tirx.max(tirx.min(x, _f(4.0)), _f(-4.0)), body)


def _approx(e: Any) -> Any | None:
    """The approximation replacing call `e`, or None when `e` is not a float32/float16 exp/tanh/sigmoid."""
    from tvm import ir, tirx

    if not isinstance(e, ir.expr.Call) or isinstance(e, ir.expr.TensorLoad):
        return None
    name = getattr(e.op, "name", "").removeprefix("tirx.")
    dtype = str(e.ty)
    if name not in FUNCS or dtype not in ("float32", "float16"):
        return None
    x = e.args[0] if dtype == "float32" else tirx.Cast("float32", e.args[0])
    y = {"exp": fast_exp, "tanh": fast_tanh, "erf": fast_erf}.get(name, lambda v: _f(1.0) / (_f(1.0) + fast_exp(-v)))(x)
    return y if dtype == "float32" else tirx.Cast(dtype, y)


def _rewrite_block(block: Any) -> Any | None:
    from tvm import s_tir, tirx

    changed = False

    def store(st: Any) -> Any:
        nonlocal changed
        if not isinstance(st, tirx.BufferStore):
            return st
        v = map_expr(st.value, _approx)
        if v.same_as(st.value):
            return st
        changed = True
        return tirx.BufferStore(st.buffer, v, st.indices)

    body, init = store(block.body), (store(block.init) if block.init is not None else None)
    if not changed:
        return None
    return s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, init,
                        block.alloc_buffers, block.match_buffers, block.annotations)


def approximate(func: Any) -> tuple[Any, list[str]] | None:
    """The function with every exp/tanh/sigmoid/erf replaced; None when it has none (in perfect nests)."""
    def rewrite(nest: Any, blk: Any):
        new = _rewrite_block(blk)
        return None if new is None else ([rebuild_nest(nest, new)], [])

    return rewrite_root_nests(func, rewrite)


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    got = approximate(ctx.base.base_func())
    if got is None:
        return None
    func, blocks = got
    return [as_candidate(ctx, func, NAME, {"blocks": blocks},
                         f"fast math: polynomial exp/tanh/sigmoid/erf in {', '.join(blocks)}")]
