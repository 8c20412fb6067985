"""Quantised models against ONNX Runtime through leka's import + build path: QDQ (the frontend's own
QuantizeLinear/DequantizeLinear), MatMulInteger (the frontend's), and the QOperator nodes rewritten by
leka/optimize/rewrite_quant.py (QLinearConv, QLinearMatMul, ConvInteger, com.microsoft QLinearAdd)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.onnx_vs_ort import run_both, save

U8, I8, F, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT, TensorProto.INT32
RNG = np.random.default_rng(0)


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def c(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


# Weights of uint8 x int8 convolutions stay in 7 bits (ORT's reduce_range): on x86 without VNNI ONNX Runtime
# multiplies u8 x s8 pairs with vpmaddubsw, whose int16 pair sums saturate (255 * 127 * 2 > 32767); with full-range
# weights its QLinearConv differed from the exact result by up to 72 on an AVX2 host, while leka's was exact.
W7 = (-63, 64)


def assert_exact(want, got):
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
        assert diff.max() == 0, f"{(diff > 0).sum()} of {diff.size} values differ, at most by {diff.max()}"


def qlinearconv_model(path, per_channel: bool = False) -> tuple:
    """(path, feeds): one QLinearConv (uint8 activations, int8 weights, int32 bias), stride 2."""
    m = 8
    ws = RNG.uniform(0.002, 0.01, m).astype(np.float32) if per_channel else np.float32(0.004)
    wzp = np.zeros(m, np.int8) if per_channel else np.int8(3)
    inits = [c("xs", np.float32(0.02)), c("xzp", np.uint8(120)), c("w", RNG.integers(*W7, (m, 3, 3, 3), np.int8)),
             c("ws", ws), c("wzp", wzp), c("ys", np.float32(0.05)), c("yzp", np.uint8(100)),
             c("b", RNG.integers(-2000, 2000, m, np.int32))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"], ["y"],
                            pads=[1, 1, 1, 1], strides=[2, 2])
    path = save(path, [node], [vi("x", U8, [1, 3, 16, 16])], [vi("y", U8, [1, m, 8, 8])], inits)
    return path, {"x": RNG.integers(0, 256, (1, 3, 16, 16), np.uint8)}


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinearconv_bit_exact(tmp_path, per_channel):
    assert_exact(*run_both(*qlinearconv_model(tmp_path / "m.onnx", per_channel)))


@pytest.mark.parametrize("per_column", [False, True])
def test_qlinearmatmul_and_qlinearadd_bit_exact(tmp_path, per_column):
    ws = RNG.uniform(0.005, 0.02, 16).astype(np.float32) if per_column else np.float32(0.01)
    wzp = RNG.integers(-3, 4, 16).astype(np.int8) if per_column else np.int8(0)
    inits = [c("as", np.float32(0.03)), c("azp", np.int8(-5)), c("w", RNG.integers(-127, 128, (32, 16), np.int8)),
             c("ws", ws), c("wzp", wzp), c("ys", np.float32(0.2)), c("yzp", np.int8(7)),
             c("zs", np.float32(0.25)), c("zzp", np.int8(-3))]
    mm = helper.make_node("QLinearMatMul", ["a", "as", "azp", "w", "ws", "wzp", "ys", "yzp"], ["y"])
    add = helper.make_node("QLinearAdd", ["y", "ys", "yzp", "y", "ys", "yzp", "zs", "zzp"], ["z"],
                           domain="com.microsoft")
    path = save(tmp_path / "m.onnx", [mm, add], [vi("a", I8, [4, 32])], [vi("y", I8, [4, 16]), vi("z", I8, [4, 16])],
                inits, ms_opset=True)
    assert_exact(*run_both(path, {"a": RNG.integers(-128, 128, (4, 32), np.int8)}))


def test_conv_integer_and_matmul_integer_exact(tmp_path):
    inits = [c("w", RNG.integers(0, 256, (4, 3, 3, 3), np.uint8)), c("xzp", np.uint8(128)), c("wzp", np.uint8(10)),
             c("m", RNG.integers(0, 256, (6, 5), np.uint8)), c("mzp", np.uint8(3))]
    conv = helper.make_node("ConvInteger", ["x", "w", "xzp", "wzp"], ["y"])
    mmi = helper.make_node("MatMulInteger", ["a", "m", "xzp", "mzp"], ["z"])
    path = save(tmp_path / "m.onnx", [conv, mmi], [vi("x", U8, [1, 3, 8, 8]), vi("a", U8, [2, 6])],
                [vi("y", I32, [1, 4, 6, 6]), vi("z", I32, [2, 5])], inits)
    assert_exact(*run_both(path, {"x": RNG.integers(0, 256, (1, 3, 8, 8), np.uint8),
                                  "a": RNG.integers(0, 256, (2, 6), np.uint8)}))


def test_qdq_conv_within_one_step(tmp_path):
    inits = [c("s", np.float32(0.05)), c("zp", np.uint8(128)), c("w", RNG.integers(*W7, (4, 3, 3, 3), np.int8)),
             c("ws", np.float32(0.01)), c("wzp", np.int8(0)), c("os", np.float32(0.1)), c("ozp", np.uint8(128))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wzp"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["yf"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["yf", "os", "ozp"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "os", "ozp"], ["y"])]
    path = save(tmp_path / "m.onnx", nodes, [vi("x", F, [1, 3, 8, 8])], [vi("y", F, [1, 4, 8, 8])], inits)
    (want,), (got,) = run_both(path, {"x": RNG.normal(0, 2, (1, 3, 8, 8)).astype(np.float32)})
    # ORT fuses DQ -> Conv -> Q into an integer QLinearConv; TVM computes the float Conv: a value on a rounding
    # boundary may land one quantisation step (0.1) away
    assert np.abs(got - want).max() <= 0.1 + 1e-6


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_ort_quantize_static_cnn_within_one_step(tmp_path, fmt):
    """quantize_static's own output (QOperator: QLinearConv, QLinearMatMul, com.microsoft QLinearAdd and
    QLinearGlobalAveragePool) within one step of the final DequantizeLinear's scale (measured: bit-exact)."""
    import onnx

    from leka.optimize.holdout_models import quantized_cnn

    path = quantized_cnn(tmp_path / "q.onnx", fmt, size=16)
    m = onnx.load(str(path))
    last = m.graph.node[-1]
    assert last.op_type == "DequantizeLinear"
    step = float(next(numpy_helper.to_array(t) for t in m.graph.initializer if t.name == last.input[1]))
    (want,), (got,) = run_both(path, {"image": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)})
    assert np.abs(got - want).max() <= step * 1.0001
