"""Normalisation TE blocks over the last axis: LayerNorm, RMSNorm, BatchNorm inference (+ ReLU).
fp16 variants compute statistics in fp32 and cast the result back.
"""

from __future__ import annotations

import numpy as np

from .reduce import row_reduce


def _f32(v):
    return v if v.dtype == "float32" else v.astype("float32")


def layernorm(X, gamma, beta, *, eps: float = 1e-5, name: str = "Y"):
    from tvm import te

    shp = tuple(X.shape)
    mean = row_reduce(X, "mean", name=name + "_mean")
    D = te.compute(shp, lambda *i: _f32(X[i]) - mean[i[:-1]], name=name + "_cent")
    var = row_reduce(D, "sumsq", name=name + "_var")
    n = int(shp[-1])
    return te.compute(
        shp,
        lambda *i: (D[i] * te.rsqrt(var[i[:-1]] * (1.0 / n) + eps) * _f32(gamma[i[-1]]) + _f32(beta[i[-1]])).astype(
            X.dtype
        ),
        name=name,
    )


def layernorm_np(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + eps) * g + b


def rmsnorm(X, gamma, *, eps: float = 1e-6, name: str = "Y"):
    from tvm import te

    shp = tuple(X.shape)
    ss = row_reduce(X, "sumsq", name=name + "_ss")
    n = int(shp[-1])
    return te.compute(
        shp,
        lambda *i: (_f32(X[i]) * te.rsqrt(ss[i[:-1]] * (1.0 / n) + eps) * _f32(gamma[i[-1]])).astype(X.dtype),
        name=name,
    )


def rmsnorm_np(x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def batchnorm_relu(X, mean, var, gamma, beta, *, eps: float = 1e-3, relu: bool = True, name: str = "Y"):
    """Inference BatchNorm over the last (feature) axis, optional ReLU."""
    from tvm import te

    def f(*i):
        c = i[-1]
        v = (_f32(X[i]) - mean[c]) * te.rsqrt(var[c] + eps) * gamma[c] + beta[c]
        return (te.max(v, 0.0) if relu else v).astype(X.dtype)

    return te.compute(tuple(X.shape), f, name=name)


def batchnorm_relu_np(x, mean, var, g, b, eps: float = 1e-3, relu: bool = True) -> np.ndarray:
    y = (x - mean) / np.sqrt(var + eps) * g + b
    return np.maximum(y, 0) if relu else y
