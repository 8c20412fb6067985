"""QOperator int8 nodes rewritten, ONNX to ONNX, into operators TVM's Relax frontend has, before the import.

QLinearConv, QLinearMatMul (and ONNX Runtime's com.microsoft QLinearAdd) become integer arithmetic carried
in float32, then ONNX Runtime's requantisation:

    acc = Conv/MatMul(float(x) - x_zero_point, float(w) - w_zero_point) [+ float(bias)]     (exact integers)
    y   = QuantizeLinear(acc * (x_scale * w_scale / y_scale), 1, y_zero_point)  (round half to even, saturate)

which is the order of operations of ONNX Runtime's kernels (an int32 accumulator times one float multiplier),
so the result is bit-exact with it while every partial sum stays below 2**24 (float32's exact integers;
|x - zp| * |w - zp| <= 255 * 255, so a reduction of up to ~258 terms always, and in practice far more).
Per-channel weight scales and zero points (QLinearConv axis 0, QLinearMatMul per column) broadcast.
ConvInteger likewise becomes Cast(Conv(float(x) - x_zp, float(w) - w_zp), int32). ONNX Runtime's contrib
QLinearAdd and QLinearGlobalAveragePool (NCHW) become the float computation on dequantised values, then
QuantizeLinear: within one quantisation step of ONNX Runtime (its kernels round in a different order).
"""
from __future__ import annotations

from typing import Any

import numpy as np

QUANT_OPS = ("QLinearConv", "QLinearMatMul", "ConvInteger")
CONTRIB_OPS = ("QLinearAdd", "QLinearGlobalAveragePool")  # com.microsoft, as quantize_static's QOperator emits


def _ours(node: Any) -> bool:
    if node.op_type in CONTRIB_OPS:
        channels_last = any(a.name == "channels_last" and a.i for a in node.attribute)
        return node.domain == "com.microsoft" and not channels_last
    return node.op_type in QUANT_OPS and node.domain in ("", "ai.onnx")


def expand_qoperators(model: Any) -> Any:
    """A copy of `model` with every QUANT_OPS node rewritten (`model` itself when it has none)."""
    import onnx

    if not any(_ours(n) for n in model.graph.node):
        return model
    ranks = _ranks(model)
    nodes, inits = [], []
    for k, node in enumerate(model.graph.node):
        if not _ours(node):
            nodes.append(node)
            continue
        b = _Emitter(f"{node.name or node.op_type + str(k)}/q")
        {"QLinearConv": _qlinear_conv, "QLinearMatMul": _qlinear_matmul, "ConvInteger": _conv_integer,
         "QLinearAdd": _qlinear_add, "QLinearGlobalAveragePool": _qlinear_gap}[node.op_type](b, node, ranks)
        nodes += b.nodes
        inits += b.inits
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(inits)
    if not any(n.domain == "com.microsoft" for n in nodes):  # the contrib domain is no longer used
        keep = [o for o in out.opset_import if o.domain != "com.microsoft"]
        del out.opset_import[:]
        out.opset_import.extend(keep)
    return out


def _ranks(model: Any) -> dict[str, int]:
    import onnx

    g = onnx.shape_inference.infer_shapes(model).graph
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in [*g.input, *g.value_info, *g.output]
             if vi.type.tensor_type.HasField("shape")}
    ranks.update({t.name: len(t.dims) for t in g.initializer})
    return ranks


class _Emitter:
    def __init__(self, prefix: str) -> None:
        self.prefix, self._n = prefix, 0
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def name(self, tag: str) -> str:
        self._n += 1
        return f"{self.prefix}/{tag}_{self._n}"

    def const(self, value: Any) -> str:
        from onnx import numpy_helper

        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def emit(self, op: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        from onnx import helper

        o = out or self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [o], name=self.name(op), **attrs))
        return o

    def centred(self, x: str, zp: str, zp_shape: list[int] | None = None) -> str:
        """float(x) - float(zp) (zp reshaped to zp_shape for per-channel broadcasting); float(x) when no zp."""
        xf = self.emit("Cast", [x], to=1)
        if not zp:
            return xf
        zf = self.emit("Cast", [zp], to=1)
        if zp_shape is not None:
            zf = self.emit("Reshape", [zf, self.const(np.array(zp_shape, np.int64))])
        return self.emit("Sub", [xf, zf])

    def requantize(self, acc: str, scale: str, y_scale: str, y_zp: str, out: str) -> None:
        mult = self.emit("Div", [scale, y_scale])
        ins = [self.emit("Mul", [acc, mult]), self.const(np.float32(1.0))] + ([y_zp] if y_zp else [])
        self.emit("QuantizeLinear", ins, out=out)


def _inputs(node: Any, n: int) -> list[str]:
    return [node.input[i] if len(node.input) > i else "" for i in range(n)]


def _conv_attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _qlinear_conv(b: _Emitter, node: Any, ranks: dict[str, int]) -> None:
    x, xs, xzp, w, ws, wzp, ys, yzp, bias = _inputs(node, 9)
    rank = ranks.get(w, 4)
    per_out = [-1] + [1] * (rank - 1)  # [M, 1, 1, 1]: weight zero point per output channel
    acc = b.emit("Conv", [b.centred(x, xzp), b.centred(w, wzp, per_out)], **_conv_attrs(node))
    if bias:
        acc = b.emit("Add", [acc, b.emit("Reshape", [b.emit("Cast", [bias], to=1),
                                                    b.const(np.array([1, -1] + [1] * (rank - 2), np.int64))])])
    scale = b.emit("Reshape", [ws, b.const(np.array([1, -1] + [1] * (rank - 2), np.int64))])
    b.requantize(acc, b.emit("Mul", [xs, scale]), ys, yzp, node.output[0])


def _qlinear_matmul(b: _Emitter, node: Any, ranks: dict[str, int]) -> None:
    a, as_, azp, w, ws, wzp, ys, yzp = _inputs(node, 8)
    acc = b.emit("MatMul", [b.centred(a, azp), b.centred(w, wzp)])
    b.requantize(acc, b.emit("Mul", [as_, ws]), ys, yzp, node.output[0])


def _conv_integer(b: _Emitter, node: Any, ranks: dict[str, int]) -> None:
    x, w, xzp, wzp = _inputs(node, 4)
    rank = ranks.get(w, 4)
    acc = b.emit("Conv", [b.centred(x, xzp), b.centred(w, wzp, [-1] + [1] * (rank - 1) if wzp else None)],
                 **_conv_attrs(node))
    b.emit("Cast", [acc], out=node.output[0], to=6)


def _qlinear_add(b: _Emitter, node: Any, ranks: dict[str, int]) -> None:
    """com.microsoft QLinearAdd: (a - azp) * as + (b - bzp) * bs, requantised to (ys, yzp)."""
    a, as_, azp, c, cs, czp, ys, yzp = _inputs(node, 8)
    s = b.emit("Add", [b.emit("Mul", [b.centred(a, azp), as_]), b.emit("Mul", [b.centred(c, czp), cs])])
    b.requantize(s, b.const(np.float32(1.0)), ys, yzp, node.output[0])


def _qlinear_gap(b: _Emitter, node: Any, ranks: dict[str, int]) -> None:
    """com.microsoft QLinearGlobalAveragePool (NCHW): mean(x - xzp) * xs, requantised to (ys, yzp)."""
    x, xs, xzp, ys, yzp = _inputs(node, 5)
    b.requantize(b.emit("GlobalAveragePool", [b.centred(x, xzp)]), xs, ys, yzp, node.output[0])
