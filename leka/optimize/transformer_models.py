"""A transformer encoder block as torch exports it (post-LN BERT layer), built with onnx.helper from a fixed
seed: LayerNormalization, MatMul with batched and transposed operands (Q/K/V heads, Q @ K^T, P @ V),
Softmax, Erf-GELU and residual adds. Shared by the tests and the experiments/ scripts."""
from __future__ import annotations

from typing import Any

import numpy as np


def encoder_block(seq: int = 64, dim: int = 128, heads: int = 4, ffn: int = 512, opset: int = 17,
                  seed: int = 0) -> Any:
    """ModelProto of one encoder layer on input x [1, seq, dim] -> y [1, seq, dim]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    hd = dim // heads

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(name: str, *shape: int) -> str:
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x: str, name: str, n_in: int, n_out: int) -> str:
        y = node("MatMul", [x, weight(f"{name}.w", n_in, n_out)], f"{name}.mm")
        return node("Add", [y, const(f"{name}.b", (0.1 * rng.standard_normal(n_out)).astype(np.float32))], name)

    def heads_of(x: str, name: str, perm: list[int]) -> str:
        r = node("Reshape", [x, const(f"{name}.shape", np.array([1, seq, heads, hd], np.int64))], f"{name}.r")
        return node("Transpose", [r], f"{name}.t", perm=perm)

    def layer_norm(x: str, name: str) -> str:
        g = const(f"{name}.g", (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32))
        b = const(f"{name}.b", (0.1 * rng.standard_normal(dim)).astype(np.float32))
        return node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-5)

    q = heads_of(linear("x", "q", dim, dim), "qh", [0, 2, 1, 3])  # [1, h, seq, hd]
    k = heads_of(linear("x", "k", dim, dim), "kh", [0, 2, 3, 1])  # [1, h, hd, seq]: K^T
    v = heads_of(linear("x", "v", dim, dim), "vh", [0, 2, 1, 3])
    s = node("Div", [node("MatMul", [q, k], "qk"), const("scale", np.array(np.sqrt(hd), np.float32))], "scores")
    p = node("Softmax", [s], "probs", axis=-1)
    ctx = node("Transpose", [node("MatMul", [p, v], "pv")], "ctx.t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, const("ctx.shape", np.array([1, seq, dim], np.int64))], "ctx")
    h1 = layer_norm(node("Add", [linear(ctx, "o", dim, dim), "x"], "res1"), "ln1")
    f = linear(h1, "ff1", dim, ffn)
    erf = node("Erf", [node("Div", [f, const("sqrt2", np.array(np.sqrt(2.0), np.float32))], "gelu.d")], "gelu.e")
    one, half = const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32))
    gelu = node("Mul", [node("Mul", [f, node("Add", [erf, one], "gelu.a")], "gelu.m"), half], "gelu")
    y = layer_norm(node("Add", [linear(gelu, "ff2", ffn, dim), h1], "res2"), "y")
    graph = helper.make_graph(nodes, "encoder_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, seq, dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="leka")
    model.ir_version = 8
    return model
