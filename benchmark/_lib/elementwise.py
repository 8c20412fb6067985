"""Activations and elementwise epilogues, as paired TE expressions and NumPy references.

Each activation maps a float32 TE expression to a float32 expression; fp16 tasks upcast, apply
and downcast (how mixed-precision edge runtimes evaluate transcendental functions), while the
NumPy side always runs in float64/float32 and the task casts the result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

SQRT1_2 = 1.0 / math.sqrt(2.0)
GELU_C = math.sqrt(2.0 / math.pi)


def _f(v: float):
    from tvm import tirx

    return tirx.const(v, "float32")


def _softplus_te(x):
    from tvm import te

    return te.max(x, _f(0.0)) + te.log(_f(1.0) + te.exp(-te.abs(x)))


def _softplus_np(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _sigmoid_np(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


def _erf_np(x):
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7, far inside fp32 task tolerance); avoids a scipy dependency."""
    x = np.asarray(x, dtype=np.float64)
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


@dataclass(frozen=True)
class Activation:
    name: str
    te_fn: Callable[[Any], Any]
    np_fn: Callable[[np.ndarray], np.ndarray]
    flops: int  # per element, counting transcendental calls as 1
    source: str


def _te(expr_fn):
    """Defer `tvm` imports until the TE expression is actually built."""
    def wrapped(x):
        from tvm import te

        return expr_fn(te, x)
    return wrapped


ACTIVATIONS: dict[str, Activation] = {a.name: a for a in [
    Activation("relu", _te(lambda te, x: te.max(x, _f(0.0))), lambda x: np.maximum(x, 0), 1,
               "ResNet-8 / VWW MobileNetV1"),
    Activation("relu6", _te(lambda te, x: te.min(te.max(x, _f(0.0)), _f(6.0))), lambda x: np.clip(x, 0, 6), 2,
               "MobileNetV2"),
    Activation("hardswish", _te(lambda te, x: x * te.min(te.max(x + _f(3.0), _f(0.0)), _f(6.0)) / _f(6.0)),
               lambda x: x * np.clip(x + 3, 0, 6) / 6, 5, "MobileNetV3"),
    Activation("hardsigmoid", _te(lambda te, x: te.min(te.max(x + _f(3.0), _f(0.0)), _f(6.0)) / _f(6.0)),
               lambda x: np.clip(x + 3, 0, 6) / 6, 4, "MobileNetV3 SE gate"),
    Activation("sigmoid", _te(lambda te, x: te.sigmoid(x)), _sigmoid_np, 4, "SSD/YOLO score heads"),
    Activation("silu", _te(lambda te, x: x * te.sigmoid(x)), lambda x: x * _sigmoid_np(x), 5,
               "EfficientNet-Lite / YOLOv5 SiLU"),
    Activation("gelu_erf", _te(lambda te, x: _f(0.5) * x * (_f(1.0) + te.erf(x * _f(SQRT1_2)))),
               lambda x: 0.5 * x * (1 + _erf_np(x * SQRT1_2)), 5, "MobileViT / ConvNeXt"),
    Activation("gelu_tanh", _te(lambda te, x: _f(0.5) * x * (_f(1.0) + te.tanh(
        _f(GELU_C) * (x + _f(0.044715) * x * x * x)))),
        lambda x: 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x ** 3))), 8, "EfficientFormer (tanh GELU)"),
    Activation("mish", _te(lambda te, x: x * te.tanh(_softplus_te(x))), lambda x: x * np.tanh(_softplus_np(x)), 7,
               "YOLOv4 Mish"),
    Activation("leaky_relu", _te(lambda te, x: te.if_then_else(x > _f(0.0), x, x * _f(0.1))),
               lambda x: np.where(x > 0, x, 0.1 * x), 2, "YOLOv3-tiny leaky ReLU 0.1"),
    Activation("elu", _te(lambda te, x: te.if_then_else(x > _f(0.0), x, te.exp(te.min(x, _f(0.0))) - _f(1.0))),
               lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), 3, "ENet ELU"),
    Activation("softplus", _te(lambda te, x: _softplus_te(x)), _softplus_np, 5, "Mish/YOLO building block"),
    Activation("tanh", _te(lambda te, x: te.tanh(x)), np.tanh, 4, "style-transfer output layer"),
    Activation("hardtanh", _te(lambda te, x: te.min(te.max(x, _f(-1.0)), _f(1.0))), lambda x: np.clip(x, -1, 1), 2,
               "quantisation-friendly clip [-1,1]"),
]}


def apply_act(name: str | None, x):
    return x if name is None else ACTIVATIONS[name].te_fn(x)


def apply_act_np(name: str | None, x: np.ndarray) -> np.ndarray:
    if name is None:
        return x
    with np.errstate(over="ignore", invalid="ignore"):
        return ACTIVATIONS[name].np_fn(x)


def unary_def(act: str, shape: tuple[int, ...], dtype: str):
    """Y = act(X) elementwise; fp16 computes in fp32 internally."""
    from tvm import te

    X = te.placeholder(shape, dtype, name="X")
    Y = te.compute(shape, lambda *i: apply_act(act, X(*i).astype("float32")).astype(dtype), name="Y")
    return te.create_prim_func([X, Y])


def channel_axis(layout: str, ndim: int = 4) -> int:
    return ndim - 1 if layout == "NHWC" else 1


def bn_def(shape: tuple[int, ...], layout: str, dtype: str, act: str | None = None, eps: float = 1e-3):
    """Inference batch-norm (gamma, beta, mean, var as inputs), optional activation."""
    from tvm import te

    ax = channel_axis(layout, len(shape))
    C = shape[ax]
    X = te.placeholder(shape, dtype, name="X")
    g, b, m, v = (te.placeholder((C,), "float32", name=n) for n in ("gamma", "beta", "mean", "var"))

    def f(*i):
        c = i[ax]
        y = (X(*i).astype("float32") - m[c]) * (g[c] / te.sqrt(v[c] + _f(eps))) + b[c]
        return apply_act(act, y).astype(dtype)
    Y = te.compute(shape, f, name="Y")
    return te.create_prim_func([X, g, b, m, v, Y])


def bn_ref(x, g, b, m, v, *, layout: str, act: str | None = None, eps: float = 1e-3):
    ax = channel_axis(layout, x.ndim)
    bshape = [1] * x.ndim
    bshape[ax] = -1
    r = lambda a: a.astype(np.float64).reshape(bshape)  # noqa: E731
    y = (x.astype(np.float64) - r(m)) * (r(g) / np.sqrt(r(v) + eps)) + r(b)
    return apply_act_np(act, y)


def bn_np_params(c: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Realistic folded-BN statistics: gamma ~ 1, positive variance."""
    return [rng.uniform(0.5, 1.5, c).astype("float32"), rng.normal(0, 0.5, c).astype("float32"),
            rng.normal(0, 0.5, c).astype("float32"), rng.uniform(0.2, 2.0, c).astype("float32")]
