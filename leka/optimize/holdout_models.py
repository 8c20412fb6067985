"""Held-out models, built with onnx.helper (and ONNX Runtime's quantiser) the way converters emit them: models
the optimiser's rules were not developed on (issue 22's acceptance set, experiments/holdout_models.py).

  encoder_block  a transformer encoder block as torch exports it: LayerNormalization, Q/K/V MatMuls, the
                 Reshape/Transpose/MatMul/Softmax attention pattern, Erf-GELU (or the opset-20 Gelu op)
  kws_rnn        an LSTM or GRU keyword-spotting model: [1, 49, 10] MFCC frames (batch first, as torch's
                 batch_first modules export), Transpose, the recurrent node, its last hidden state, Gemm
  small_cnn      a float CNN; quantized_cnn: the same through onnxruntime.quantization.quantize_static, in
                 QDQ or QOperator format
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class _G:
    """Nodes and He-scaled random initializers of one graph."""

    def __init__(self, seed: int) -> None:
        self.rng, self._n = np.random.default_rng(seed), 0
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def w(self, shape: tuple[int, ...], scale: float | None = None, value: Any = None) -> str:
        from onnx import numpy_helper

        self._n += 1
        name = f"w{self._n}"
        if value is None:
            fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:])) if len(shape) > 2 else 1
            value = self.rng.standard_normal(shape) * (scale if scale is not None else (2.0 / fan_in) ** 0.5)
        arr = np.asarray(value)
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32) if arr.dtype.kind == "f" else arr, name))
        return name

    def op(self, op: str, inputs: list[str], **attrs) -> str:
        from onnx import helper

        self._n += 1
        out = f"t{self._n}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{self._n}", **attrs))
        return out

    def model(self, inputs: list[tuple[str, list[int]]], out: str, out_shape: list[int], opset: int) -> Any:
        import onnx
        from onnx import TensorProto, helper

        self.nodes[-1].output[0] = "output"
        del out
        g = helper.make_graph(self.nodes, "holdout", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                     for n, s in inputs],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(m)
        return m


def _shape(g: _G, dims: list[int]) -> str:
    return g.w((len(dims),), value=np.array(dims, np.int64))


def encoder_block(seq: int = 64, d: int = 128, heads: int = 4, ff: int = 512, opset: int = 17,
                  gelu_op: bool = False, seed: int = 0) -> Any:
    """x [1, seq, d] -> pre-LN self-attention + residual -> pre-LN MLP (GELU) + residual."""
    g = _G(seed)
    hd = d // heads

    def ln(x: str) -> str:
        return g.op("LayerNormalization", [x, g.w((d,), value=1 + 0.1 * g.rng.standard_normal(d)),
                                           g.w((d,), 0.1)], axis=-1, epsilon=1e-5)

    def linear(x: str, n_in: int, n_out: int) -> str:
        return g.op("Add", [g.op("MatMul", [x, g.w((n_in, n_out))]), g.w((n_out,), 0.05)])

    def heads_of(x: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [x, _shape(g, [1, seq, heads, hd])])], perm=perm)

    h = ln("x")
    q, k, v = (linear(h, d, d) for _ in range(3))
    scores = g.op("MatMul", [heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1])])
    p = g.op("Softmax", [g.op("Div", [scores, g.w((), value=np.float32(hd ** 0.5))])], axis=-1)
    att = g.op("Transpose", [g.op("MatMul", [p, heads_of(v, [0, 2, 1, 3])])], perm=[0, 2, 1, 3])
    x1 = g.op("Add", ["x", linear(g.op("Reshape", [att, _shape(g, [1, seq, d])]), d, d)])
    u = linear(ln(x1), d, ff)
    if gelu_op:
        act = g.op("Gelu", [u])
    else:  # torch's exact GELU: 0.5 * u * (1 + erf(u / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [u, g.w((), value=np.float32(2 ** 0.5))])])
        act = g.op("Mul", [g.op("Mul", [u, g.op("Add", [e, g.w((), value=np.float32(1))])]),
                           g.w((), value=np.float32(0.5))])
    y = g.op("Add", [x1, linear(act, ff, d)])
    return g.model([("x", [1, seq, d])], y, [1, seq, d], opset)


def kws_rnn(cell: str = "LSTM", frames: int = 49, feats: int = 10, hidden: int = 64, classes: int = 12,
            opset: int = 14, seed: int = 0) -> Any:
    """MFCC [1, frames, feats] -> Transpose -> LSTM/GRU (hidden) -> last hidden state -> Gemm -> [1, classes]."""
    from onnx import helper

    g = _G(seed)
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    s = 1.0 / hidden ** 0.5  # torch's uniform(-1/sqrt(h), 1/sqrt(h)) init, as a normal of that scale
    ws = [g.w((1, gates * hidden, feats), s), g.w((1, gates * hidden, hidden), s), g.w((1, 2 * gates * hidden), s)]
    x = g.op("Transpose", ["mfcc"], perm=[1, 0, 2])
    outs = ["rnn_y", "rnn_h"] + (["rnn_c"] if cell == "LSTM" else [])
    g.nodes.append(helper.make_node(cell, [x, *ws], outs, name=cell.lower(), hidden_size=hidden))
    last = g.op("Reshape", ["rnn_h", _shape(g, [1, hidden])])
    y = g.op("Gemm", [last, g.w((classes, hidden)), g.w((classes,), 0.05)], transB=1)
    return g.model([("mfcc", [1, frames, feats])], y, [1, classes], opset)


def small_cnn(size: int = 32, classes: int = 10, seed: int = 0) -> Any:
    """image [1, 3, size, size] -> 3 x (Conv 3x3 + Relu, the 2nd and 3rd stride 2) -> GAP -> MatMul+Add."""
    g = _G(seed)
    x, cin = "image", 3
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        conv = g.op("Conv", [x, g.w((cout, cin, 3, 3)), g.w((cout,), 0.05)], pads=[1, 1, 1, 1], strides=[stride] * 2)
        x, cin = g.op("Relu", [conv]), cout
    flat = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    y = g.op("Add", [g.op("MatMul", [flat, g.w((cin, classes))]), g.w((classes,), 0.05)])
    return g.model([("image", [1, 3, size, size])], y, [1, classes], 17)


def quantized_cnn(out: str | Path, fmt: str = "QDQ", size: int = 32, seed: int = 0) -> Path:
    """small_cnn quantised by onnxruntime.quantization.quantize_static (uint8 activations, int8 weights,
    calibrated on 8 random images) in `fmt` "QDQ" or "QOperator"; written to `out`."""
    import tempfile

    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(seed)
            self.data = iter([{"image": rng.standard_normal((1, 3, size, size)).astype(np.float32)}
                              for _ in range(8)])

        def get_next(self) -> dict | None:
            return next(self.data, None)

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        onnx.save(small_cnn(size, seed=seed), str(src))
        quantize_static(str(src), str(out), Reader(), quant_format=getattr(QuantFormat, fmt),
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out
