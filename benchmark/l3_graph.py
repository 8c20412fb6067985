"""Builder for the L3 graph workloads: small ONNX graphs made with onnx.helper (no downloads).

Weights are *graph inputs*, not initializers, so that every tensor of a workload is generated
(no hidden data) and so that the Relax module imported from ONNX prints as TVMScript text that
parses back: large constants print as `metadata[...]` references that TVMScript text cannot carry,
and a candidate is text. Weights are drawn He-scaled (normal * sqrt(2 / fan_in)) so activations keep
their magnitude through deep graphs; activations follow the evaluator's trial distributions.
BatchNorm is folded into the conv/dense weights and biases, as deployed inference graphs do.

Layout is NCHW (ONNX's convention); FLOPs count 2 per multiply-add plus 1 per elementwise output;
bytes are the compulsory traffic: every graph input and output once.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from leka.tasks.task import ArgSpec, Task, generate

OPSET = 17
L3_RTOL, L3_ATOL = 1e-3, 1e-4  # graph-level reassociation (conv algorithms, fused sums) vs ORT


class Graph:
    """Accumulates ONNX nodes and tracks shapes to count FLOPs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[Any] = []
        self.inputs: list[ArgSpec] = []
        self.consts: list[Any] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.weight_scale: dict[str, float] = {}
        self.flops = 0
        self._n = 0

    # --- plumbing -------------------------------------------------------------------------------
    def _name(self, op: str) -> str:
        self._n += 1
        return f"{op.lower()}_{self._n}"

    def node(self, op: str, ins: Sequence[str], shape: tuple[int, ...], flops: int = 0, **attrs: Any) -> str:
        from onnx import helper

        out = self._name(op)
        self.nodes.append(helper.make_node(op, list(ins), [out], **attrs))
        self.shapes[out] = tuple(shape)
        self.flops += int(flops)
        return out

    def input(self, name: str, shape: Sequence[int], dist: str | None = None) -> str:
        self.inputs.append(ArgSpec(name, tuple(shape), "float32", dist=dist))
        self.shapes[name] = tuple(shape)
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int | None, dist: str | None = None) -> str:
        """A weight as a graph input; fan_in None = bias (drawn small), else He-scaled."""
        self.input(name, shape, dist)
        self.weight_scale[name] = math.sqrt(2.0 / fan_in) if fan_in else 0.1
        return name

    def const(self, value: float) -> str:
        from onnx import TensorProto, helper

        name = f"c{len(self.consts)}"
        self.consts.append(helper.make_tensor(name, TensorProto.FLOAT, [], [float(value)]))
        self.shapes[name] = ()
        return name

    def shape_const(self, values: Sequence[int]) -> str:
        from onnx import TensorProto, helper

        name = f"shape{len(self.consts)}"
        self.consts.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], list(values)))
        return name

    # --- layers ---------------------------------------------------------------------------------
    def conv(self, x: str, cout: int, k: int | tuple[int, int], stride: int = 1, pads: Sequence[int] | None = None,
             group: int = 1, bias: bool = True) -> str:
        """NCHW conv; pads [top, left, bottom, right]; default 'same' for stride 1 odd k, and TF/Keras
        'same' for stride 2 (0 before, 1 after on even sizes)."""
        n, cin, h, w = self.shapes[x]
        kh, kw = (k, k) if isinstance(k, int) else k
        if pads is None:
            pads = [*(_same_pad(h, kh, stride)[0], _same_pad(w, kw, stride)[0]),
                    *(_same_pad(h, kh, stride)[1], _same_pad(w, kw, stride)[1])]
        ho = (h + pads[0] + pads[2] - kh) // stride + 1
        wo = (w + pads[1] + pads[3] - kw) // stride + 1
        idx = len(self.inputs)
        wname = self.weight(f"w{idx}", (cout, cin // group, kh, kw), fan_in=cin // group * kh * kw)
        ins = [x, wname]
        if bias:
            ins.append(self.weight(f"b{idx}", (cout,), None))
        macs = n * cout * ho * wo * (cin // group) * kh * kw
        return self.node("Conv", ins, (n, cout, ho, wo), 2 * macs, kernel_shape=[kh, kw], strides=[stride, stride],
                         pads=list(pads), group=group)

    def dense(self, x: str, nout: int, bias: bool = True) -> str:
        """x[..., K] @ W[K, N] (+ b): MatMul then Add, as PyTorch/Keras exports give."""
        shape = self.shapes[x]
        k = shape[-1]
        idx = len(self.inputs)
        y = self.node("MatMul", [x, self.weight(f"w{idx}", (k, nout), fan_in=k)], (*shape[:-1], nout),
                      2 * int(np.prod(shape[:-1])) * k * nout)
        return self.add(y, self.weight(f"b{idx}", (nout,), None)) if bias else y

    def unary(self, op: str, x: str, flops_per: int = 1, **attrs: Any) -> str:
        return self.node(op, [x], self.shapes[x], flops_per * _numel(self.shapes[x]), **attrs)

    def relu(self, x: str) -> str:
        return self.unary("Relu", x)

    def relu6(self, x: str) -> str:
        # Min with a scalar, not Clip: Clip's optional min/max inputs import as R.const("-inf"), which
        # TVMScript prints but cannot parse back.
        return self.binary("Min", self.relu(x), self.const(6.0))

    def hard_sigmoid(self, x: str) -> str:
        return self.unary("HardSigmoid", x, 3, alpha=1.0 / 6, beta=0.5)

    def hard_swish(self, x: str) -> str:
        return self.binary("Mul", x, self.hard_sigmoid(x))

    def gelu(self, x: str) -> str:
        """Exact GELU 0.5 x (1 + erf(x / sqrt 2)) from primitive ops (ONNX Gelu needs opset 20)."""
        e = self.unary("Erf", self.binary("Mul", x, self.const(1 / math.sqrt(2))))
        return self.binary("Mul", self.binary("Mul", x, self.const(0.5)), self.binary("Add", e, self.const(1.0)))

    def binary(self, op: str, a: str, b: str) -> str:
        shape = tuple(np.broadcast_shapes(self.shapes[a], self.shapes[b]))
        return self.node(op, [a, b], shape, _numel(shape))

    def add(self, a: str, b: str) -> str:
        return self.binary("Add", a, b)

    def global_avg_pool(self, x: str) -> str:
        n, c, h, w = self.shapes[x]
        return self.node("GlobalAveragePool", [x], (n, c, 1, 1), n * c * h * w)

    def avg_pool(self, x: str, k: tuple[int, int]) -> str:
        n, c, h, w = self.shapes[x]
        ho, wo = (h - k[0]) // k[0] + 1, (w - k[1]) // k[1] + 1
        return self.node("AveragePool", [x], (n, c, ho, wo), n * c * ho * wo * k[0] * k[1],
                         kernel_shape=list(k), strides=list(k))

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        return self.node("Reshape", [x, self.shape_const(shape)], tuple(shape))

    def transpose(self, x: str, perm: Sequence[int]) -> str:
        s = self.shapes[x]
        return self.node("Transpose", [x], tuple(s[p] for p in perm), perm=list(perm))

    def matmul(self, a: str, b: str) -> str:
        sa, sb = self.shapes[a], self.shapes[b]
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        out = (*batch, sa[-2], sb[-1])
        return self.node("MatMul", [a, b], out, 2 * _numel(out) * sa[-1])

    def softmax(self, x: str, axis: int = -1) -> str:
        return self.unary("Softmax", x, 5, axis=axis)

    def layer_norm(self, x: str) -> str:
        d = self.shapes[x][-1]
        idx = len(self.inputs)
        g = self.weight(f"ln_g{idx}", (d,), None)
        b = self.weight(f"ln_b{idx}", (d,), None)
        self.weight_scale[g] = -1.0  # marker: gamma drawn around 1
        return self.node("LayerNormalization", [x, g, b], self.shapes[x], 8 * _numel(self.shapes[x]), axis=-1,
                         epsilon=1e-5)

    def reduce_max(self, x: str, axis: int) -> str:
        s = list(self.shapes[x])
        out = tuple(d for i, d in enumerate(s) if i != axis % len(s))
        return self.node("ReduceMax", [x], out, _numel(self.shapes[x]), axes=[axis], keepdims=0)

    # --- finish ---------------------------------------------------------------------------------
    def model(self, outputs: Sequence[str]):
        from onnx import TensorProto, checker, helper

        ins = [helper.make_tensor_value_info(a.name, TensorProto.FLOAT, list(a.shape)) for a in self.inputs]
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(self.shapes[o])) for o in outputs]
        g = helper.make_graph(self.nodes, self.name, ins, outs, initializer=self.consts)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="leka-l3")
        m.ir_version = 8
        checker.check_model(m)
        return m


def _numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _same_pad(size: int, k: int, stride: int) -> tuple[int, int]:
    """TF/Keras 'same' padding: total = max(k - stride, k - size % stride ...); extra goes after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


@lru_cache(maxsize=None)
def _ort_session(key: str, model_bytes: bytes):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.log_severity_level = 3
    return ort.InferenceSession(model_bytes, sess_options=opts, providers=["CPUExecutionProvider"])


def make_l3_task(id: str, pattern: str, domain: str, description: str,
                 build_graph: Callable[[], tuple[Graph, list[str]]], tags: tuple[str, ...] = ()) -> Task:
    """Build the ONNX graph once (milliseconds) and wrap it as a level-3 Task."""
    g, outputs = build_graph()
    model = g.model(outputs)
    model_bytes = model.SerializeToString()
    input_specs = tuple(g.inputs)
    out_specs = tuple(ArgSpec(o if len(outputs) > 1 else "y", g.shapes[o], "float32", "output") for o in outputs)
    scales = dict(g.weight_scale)

    def build():
        from tvm.relax.frontend.onnx import from_onnx

        return from_onnx(model, keep_params_in_input=False)

    def reference(*inputs: np.ndarray):
        sess = _ort_session(id, model_bytes)
        outs = sess.run(None, {s.name: np.ascontiguousarray(x) for s, x in zip(input_specs, inputs, strict=True)})
        return tuple(outs) if len(outs) > 1 else outs[0]

    def make_inputs(rng: np.random.Generator, dist: str) -> list[np.ndarray]:
        arrs = []
        for s in input_specs:
            sc = scales.get(s.name)
            if sc is None or s.dist is not None:  # activations (and weights that must stay in a domain)
                arrs.append(generate(s, rng, dist))
            elif sc < 0:  # LayerNorm gamma
                arrs.append((1.0 + 0.1 * rng.standard_normal(s.shape)).astype(s.dtype))
            else:
                arrs.append((rng.standard_normal(s.shape) * sc).astype(s.dtype))
        return arrs

    nbytes = sum(a.nbytes for a in input_specs) + sum(a.nbytes for a in out_specs)
    return Task(id=id, pattern=pattern, level=3, domain=domain, args=input_specs + out_specs, build=build,
                reference=reference, flops=g.flops, bytes=nbytes, dtype="float32", layout="NCHW",
                description=description, rtol=L3_RTOL, atol=L3_ATOL, make_inputs=make_inputs,
                onnx_model=lambda: model, tags=("graph", "onnx") + tags,
                extra={"onnx_opset": OPSET, "onnx_nodes": len(g.nodes), "weights": "graph inputs (He-scaled)",
                       "activation_inputs": [s.name for s in input_specs if s.name not in scales]})
