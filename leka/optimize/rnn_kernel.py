"""One CPU kernel for a whole recurrent sequence (LSTM, GRU, RNN), as ONNX Runtime runs one per node.

Unrolled over the sequence (rewrite_rnn), a recurrent node is 1-3 kernel calls a time step; on keyword
models of ~0.04 ms that is most of the time (kws-lstm: 147 calls, 1.41x ONNX Runtime after tuning). Here,
on CPU targets, the node becomes its input projection (one MatMul + Add, tuned like any kernel) and one
`LekaRecurrence` node that TVM's frontend turns into a call of the PrimFunc written below: a serial loop over
the steps, each a register-tiled matrix-vector product of the state with R^T (vectors of LANES gate
columns, TILE columns a tile) and the gate arithmetic vectorised along the hidden units, with a polynomial
exp (TOPI's fast_exp) for sigmoid and tanh. It is marked `tirx.is_scheduled`: no rule searches it.

Kernel arguments, every cell alike: XP [seq, batch, G*hidden] (the projected inputs with the biases that
add to them), RT [hidden, G*hidden] (R transposed, gate order of the spec: LSTM iofc, GRU zrh), RB [hidden]
(GRU linear_before_reset=1: gate h's recurrent bias, which r multiplies; zeros otherwise), H0, C0 [batch,
hidden] -> Y [seq, batch, hidden] (in time order), HN, CN [batch, hidden] (CN = C0 but for LSTM).
Only float32 with the default activations (RNN: Tanh or Relu), no clip, no peepholes and hidden a
multiple of LANES are fused (`fused_why_not`); everything else stays unrolled.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

OP_TYPE, DOMAIN = "LekaRecurrence", "ai.leka"
LANES = 8  # fp32 lanes of an AVX2 vector; LLVM splits or joins it for other widths
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# measured on kws-lstm's 64x256 R^T (64 KB, read from L2 every step): tiles of 32, 64 and 128 columns all
# take 0.030 ms for 49 steps, so the tile only needs to divide the columns
TILES = (64, 32, 16, 8)


@dataclass(frozen=True)
class Recurrence:
    cell: str
    seq: int
    batch: int
    hidden: int
    reverse: bool = False
    lbr: int = 0  # GRU's linear_before_reset
    act: str = ""  # RNN's activation: "Tanh" or "Relu"


def fused_why_not(cell: str, hidden: int, dtype: str, acts: list[str], clip: Any, peepholes: bool) -> str:
    """Why this recurrent direction stays unrolled ('' when it can be one kernel)."""
    if dtype != "float32":
        return f"dtype {dtype}"
    if hidden % LANES:
        return f"hidden size {hidden} is not a multiple of {LANES}"
    if clip is not None or peepholes:
        return "clip or peepholes"
    if cell == "RNN" and acts in (["Tanh"], ["Relu"]):
        return ""
    return "" if tuple(acts) == DEFAULT_ACTS[cell] else f"activations {acts}"


def _tile(cols: int) -> int:
    return next(t for t in TILES if cols % t == 0)


def _math() -> tuple[Any, Any]:
    """sigmoid and tanh expressions over TOPI's fast_exp polynomial (libm's expf is a scalar call a lane)."""
    from tvm.script import tirx as T

    def fexp(x: Any) -> Any:
        x = T.max(T.min(x, T.float32(88.3762626647950)), T.float32(-88.3762626647949))
        n = T.floor(x * T.float32(1.44269504088896341) + T.float32(0.5))
        r = x - n * T.float32(0.6931471805599453)
        y = (((((T.float32(1.9875691500e-4) * r + T.float32(1.3981999507e-3)) * r + T.float32(8.3334519073e-3)) * r
               + T.float32(4.1665795894e-2)) * r + T.float32(1.6666665459e-1)) * r + T.float32(5.0000001201e-1))
        y = y * r * r + r + T.float32(1.0)
        return T.reinterpret("float32", T.shift_left(T.Cast("int32", n) + 127, 23)) * y

    def sig(x: Any) -> Any:
        return T.float32(1.0) / (T.float32(1.0) + fexp(-x))

    def tnh(x: Any) -> Any:
        return T.float32(2.0) / (T.float32(1.0) + fexp(T.float32(-2.0) * x)) - T.float32(1.0)

    return sig, tnh


def prim_func(spec: Recurrence) -> Any:
    """The kernel of `spec` (a tirx PrimFunc, scheduled as written; no global symbol of its own: the module
    names it, and a bidirectional node has two)."""
    return {"LSTM": _lstm, "GRU": _gru, "RNN": _rnn}[spec.cell](spec).without_attr("global_symbol")


def _gemv(hidden: int) -> Any:
    """dst[col0 + j] = sum_k src[k] * RT[k, col0 + j] for j < ncols: TILE accumulators (TILE/LANES vectors)
    stay in registers over the whole reduction; each src[k] is broadcast against a row of R^T."""
    from tvm.script import tirx as T

    @T.macro
    def gemv(src: Any, rt: Any, dst: Any, acc: Any, col0: int, ncols: int, tile: int) -> None:
        for jo in range(ncols // tile):
            for v in T.unroll(tile // LANES):
                for lane in T.vectorized(LANES):
                    acc[v * LANES + lane] = T.float32(0)
            for k in range(hidden):
                for v in T.unroll(tile // LANES):
                    for lane in T.vectorized(LANES):
                        acc[v * LANES + lane] = acc[v * LANES + lane] + src[k] * rt[k, col0 + jo * tile + v * LANES + lane]
            for v in T.unroll(tile // LANES):
                for lane in T.vectorized(LANES):
                    dst[col0 + jo * tile + v * LANES + lane] = acc[v * LANES + lane]

    return gemv


def _lstm(spec: Recurrence) -> Any:
    from tvm.script import tirx as T

    S, B, H = spec.seq, spec.batch, spec.hidden
    G, tile, sig, tnh, gemv = 4 * H, _tile(4 * H), *_math(), _gemv(H)
    rev = int(spec.reverse)

    # the gate arithmetic writes cs and hs, never a let-bound value: a Let inside a vectorised loop is
    # vectorised as a scalar in this TVM (every lane got lane 0's c)
    @T.prim_func
    def lstm(XP: T.Buffer((S, B, G), "float32"), RT: T.Buffer((H, G), "float32"), RB: T.Buffer((H,), "float32"),
             H0: T.Buffer((B, H), "float32"), C0: T.Buffer((B, H), "float32"), Y: T.Buffer((S, B, H), "float32"),
             HN: T.Buffer((B, H), "float32"), CN: T.Buffer((B, H), "float32")):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        hs = T.alloc_buffer((H,), "float32")
        cs = T.alloc_buffer((H,), "float32")
        gates = T.alloc_buffer((G,), "float32")
        acc = T.alloc_buffer((tile,), "float32", scope="local")
        for b in range(B):
            for j in range(H):
                hs[j] = H0[b, j]
                cs[j] = C0[b, j]
            for s in range(S):
                gemv(hs, RT, gates, acc, 0, G, tile)
                for jo in range(H // LANES):
                    for lane in T.vectorized(LANES):
                        cs[jo * LANES + lane] = (
                            sig(XP[s + rev * (S - 1 - 2 * s), b, 2 * H + jo * LANES + lane] + gates[2 * H + jo * LANES + lane])
                            * cs[jo * LANES + lane]
                            + sig(XP[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane] + gates[jo * LANES + lane])
                            * tnh(XP[s + rev * (S - 1 - 2 * s), b, 3 * H + jo * LANES + lane] + gates[3 * H + jo * LANES + lane]))
                        hs[jo * LANES + lane] = sig(XP[s + rev * (S - 1 - 2 * s), b, H + jo * LANES + lane]
                                                    + gates[H + jo * LANES + lane]) * tnh(cs[jo * LANES + lane])
                        Y[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane] = hs[jo * LANES + lane]
            for j in range(H):
                HN[b, j] = hs[j]
                CN[b, j] = cs[j]

    return lstm


def _gru(spec: Recurrence) -> Any:
    """linear_before_reset=0: h R_zr^T, then (r*h) R_h^T (two products a step); =1: h R^T once, r times
    gate h's product plus RB."""
    from tvm.script import tirx as T

    S, B, H = spec.seq, spec.batch, spec.hidden
    G, sig, tnh, gemv = 3 * H, *_math(), _gemv(H)
    tile2, tile1, tile3 = _tile(2 * H), _tile(H), _tile(3 * H)
    rev, lbr = int(spec.reverse), spec.lbr
    tile = max(tile2, tile3)

    @T.prim_func
    def gru(XP: T.Buffer((S, B, G), "float32"), RT: T.Buffer((H, G), "float32"), RB: T.Buffer((H,), "float32"),
            H0: T.Buffer((B, H), "float32"), C0: T.Buffer((B, H), "float32"), Y: T.Buffer((S, B, H), "float32"),
            HN: T.Buffer((B, H), "float32"), CN: T.Buffer((B, H), "float32")):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        hs = T.alloc_buffer((H,), "float32")
        rh = T.alloc_buffer((H,), "float32")
        zs = T.alloc_buffer((H,), "float32")
        gates = T.alloc_buffer((G,), "float32")
        acc = T.alloc_buffer((tile,), "float32", scope="local")
        for b in range(B):
            for j in range(H):
                hs[j] = H0[b, j]
            for s in range(S):
                if lbr == 1:
                    gemv(hs, RT, gates, acc, 0, G, tile3)
                else:
                    gemv(hs, RT, gates, acc, 0, 2 * H, tile2)
                for jo in range(H // LANES):
                    for lane in T.vectorized(LANES):
                        zs[jo * LANES + lane] = sig(XP[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane]
                                                    + gates[jo * LANES + lane])
                        rh[jo * LANES + lane] = sig(XP[s + rev * (S - 1 - 2 * s), b, H + jo * LANES + lane]
                                                    + gates[H + jo * LANES + lane])
                if lbr == 0:
                    for j in range(H):
                        rh[j] = rh[j] * hs[j]
                    gemv(rh, RT, gates, acc, 2 * H, H, tile1)
                    for j in range(H):  # r already applied: the shared gate-h line below multiplies by 1
                        rh[j] = T.float32(1)
                for jo in range(H // LANES):
                    for lane in T.vectorized(LANES):
                        rh[jo * LANES + lane] = tnh(XP[s + rev * (S - 1 - 2 * s), b, 2 * H + jo * LANES + lane]
                                                    + rh[jo * LANES + lane] * (gates[2 * H + jo * LANES + lane]
                                                                               + RB[jo * LANES + lane]))
                        hs[jo * LANES + lane] = rh[jo * LANES + lane] + zs[jo * LANES + lane] * (
                            hs[jo * LANES + lane] - rh[jo * LANES + lane])
                        Y[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane] = hs[jo * LANES + lane]
            for j in range(H):
                HN[b, j] = hs[j]
                CN[b, j] = C0[b, j]

    return gru


def _rnn(spec: Recurrence) -> Any:
    from tvm.script import tirx as T

    S, B, H = spec.seq, spec.batch, spec.hidden
    tile, _sig, tnh, gemv = _tile(H), *_math(), _gemv(H)
    rev, relu = int(spec.reverse), spec.act == "Relu"

    def act(x: Any) -> Any:
        return T.max(x, T.float32(0)) if relu else tnh(x)

    @T.prim_func
    def rnn(XP: T.Buffer((S, B, H), "float32"), RT: T.Buffer((H, H), "float32"), RB: T.Buffer((H,), "float32"),
            H0: T.Buffer((B, H), "float32"), C0: T.Buffer((B, H), "float32"), Y: T.Buffer((S, B, H), "float32"),
            HN: T.Buffer((B, H), "float32"), CN: T.Buffer((B, H), "float32")):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        hs = T.alloc_buffer((H,), "float32")
        gates = T.alloc_buffer((H,), "float32")
        acc = T.alloc_buffer((tile,), "float32", scope="local")
        for b in range(B):
            for j in range(H):
                hs[j] = H0[b, j]
            for s in range(S):
                gemv(hs, RT, gates, acc, 0, H, tile)
                for jo in range(H // LANES):
                    for lane in T.vectorized(LANES):
                        hs[jo * LANES + lane] = act(XP[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane]
                                                    + gates[jo * LANES + lane])
                        Y[s + rev * (S - 1 - 2 * s), b, jo * LANES + lane] = hs[jo * LANES + lane]
            for j in range(H):
                HN[b, j] = hs[j]
                CN[b, j] = C0[b, j]

    return rnn


def _converter() -> Any:
    """TVM's ONNX converter class for LekaRecurrence nodes: a call_tir of prim_func, outputs (Y, HN, CN)."""
    from tvm import relax
    from tvm.relax.frontend.onnx.onnx_frontend import OnnxOpConverter

    class LekaRecurrence(OnnxOpConverter):
        @classmethod
        def _impl_v1(cls, bb: Any, inputs: list, attr: dict, params: Any) -> Any:
            cell = attr["cell"].decode() if isinstance(attr["cell"], bytes) else attr["cell"]
            act = attr.get("act", b"")
            seq, batch, _g = (int(d) for d in inputs[0].ty.shape)
            spec = Recurrence(cell, seq, batch, int(attr["hidden"]), bool(attr.get("reverse", 0)),
                              int(attr.get("lbr", 0)), act.decode() if isinstance(act, bytes) else act)
            gv = bb.add_func(prim_func(spec), f"leka_{cell.lower()}_sequence")
            state = relax.TensorType((batch, spec.hidden), "float32")
            outs = [relax.TensorType((seq, batch, spec.hidden), "float32"), state, state]
            return bb.emit(relax.call_tir(gv, relax.Tuple(list(inputs)), outs))

    return LekaRecurrence


@contextmanager
def frontend_converter() -> Iterator[None]:
    """TVM's ONNX frontend with LekaRecurrence among its converters, for one import (its map is rebuilt by
    a module function on every lookup, so that function is wrapped and restored after)."""
    from tvm.relax.frontend.onnx import onnx_frontend

    original = onnx_frontend._get_convert_map
    cls = _converter()
    onnx_frontend._get_convert_map = lambda: {**original(), OP_TYPE: cls}
    try:
        yield
    finally:
        onnx_frontend._get_convert_map = original
