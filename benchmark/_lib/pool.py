"""Pooling in TE (max / average with explicit pads, global, adaptive) with NumPy references."""
from __future__ import annotations

import numpy as np

from .conv import Pads


def _spatial_axes(layout: str) -> tuple[int, int]:
    return (1, 2) if layout == "NHWC" else (2, 3)


def pool_out(size: int, k: int, stride: int, pad_lo: int, pad_hi: int) -> int:
    return (size + pad_lo + pad_hi - k) // stride + 1


def pool2d_te(X, kind: str, k: int, stride: int, pads: Pads, layout: str, count_include_pad: bool = False,
              acc_dtype: str = "float32", name: str = "pool"):
    """Max or average pooling; average divides by the number of valid (unpadded) taps unless
    count_include_pad. Result is in acc_dtype (float) before any cast."""
    from tvm import te, tirx

    ha, wa = _spatial_axes(layout)
    H, W = int(X.shape[ha]), int(X.shape[wa])
    pt, pb, pl, pr = pads
    oh, ow = pool_out(H, k, stride, pt, pb), pool_out(W, k, stride, pl, pr)
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")
    shape = list(X.shape)
    shape[ha], shape[wa] = oh, ow

    def fetch(idx, y, x, fill):
        iy, ix = y * stride + ry - pt, x * stride + rx - pl
        full = list(idx)
        full[ha], full[wa] = iy, ix
        inside = te.all(iy >= 0, iy < H, ix >= 0, ix < W)
        return te.if_then_else(inside, X(*full).astype(acc_dtype), fill) if any(pads) else X(*full).astype(acc_dtype)

    if kind == "max":
        def body(*idx):
            return te.max(fetch(idx, idx[ha], idx[wa], te.min_value(acc_dtype)), axis=[ry, rx])
        return te.compute(tuple(shape), body, name=name)
    S = te.compute(tuple(shape), lambda *idx: te.sum(fetch(idx, idx[ha], idx[wa], tirx.const(0, acc_dtype)),
                                                     axis=[ry, rx]), name=f"{name}_sum")

    def avg(*idx):
        if count_include_pad or not any(pads):
            cnt = tirx.const(k * k, acc_dtype)
        else:
            y0, x0 = idx[ha] * stride - pt, idx[wa] * stride - pl
            hh = te.min(y0 + k, H) - te.max(y0, 0)
            ww = te.min(x0 + k, W) - te.max(x0, 0)
            cnt = (hh * ww).astype(acc_dtype)
        return S(*idx) / cnt
    return te.compute(tuple(shape), avg, name=name)


def pool2d_ref(x: np.ndarray, kind: str, k: int, stride: int, pads: Pads, layout: str,
               count_include_pad: bool = False) -> np.ndarray:
    xf = x.astype(np.float64)
    if layout == "NCHW":
        xf = xf.transpose(0, 2, 3, 1)
    _, H, W, _ = xf.shape
    pt, pb, pl, pr = pads
    oh, ow = pool_out(H, k, stride, pt, pb), pool_out(W, k, stride, pl, pr)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(xf, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    ones = np.pad(np.ones((1, H, W, 1)), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    acc = np.full((xf.shape[0], oh, ow, xf.shape[3]), fill)
    cnt = np.zeros((1, oh, ow, 1))
    for i in range(k):
        for j in range(k):
            win = xp[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            acc = np.maximum(acc, win) if kind == "max" else acc + win
            cnt += ones[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
    if kind != "max":
        acc = acc / (k * k if count_include_pad else cnt)
    return acc.transpose(0, 3, 1, 2) if layout == "NCHW" else acc


def global_pool_te(X, kind: str, layout: str, acc_dtype: str = "float32", name: str = "gpool"):
    """(1,H,W,C) -> (1,1,1,C) (NHWC) or (1,C,1,1) (NCHW)."""
    from tvm import te, tirx

    ha, wa = _spatial_axes(layout)
    H, W = int(X.shape[ha]), int(X.shape[wa])
    ry = te.reduce_axis((0, H), name="ry")
    rx = te.reduce_axis((0, W), name="rx")
    shape = list(X.shape)
    shape[ha] = shape[wa] = 1

    def at(idx):
        full = list(idx)
        full[ha], full[wa] = ry, rx
        return X(*full).astype(acc_dtype)
    if kind == "max":
        return te.compute(tuple(shape), lambda *i: te.max(at(i), axis=[ry, rx]), name=name)
    S = te.compute(tuple(shape), lambda *i: te.sum(at(i), axis=[ry, rx]), name=f"{name}_sum")
    return te.compute(tuple(shape), lambda *i: S(*i) / tirx.const(H * W, acc_dtype), name=name)


def global_pool_ref(x: np.ndarray, kind: str, layout: str) -> np.ndarray:
    ax = _spatial_axes(layout)
    xf = x.astype(np.float64)
    return xf.max(axis=ax, keepdims=True) if kind == "max" else xf.mean(axis=ax, keepdims=True)


def adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def adaptive_avg_te(X, oh: int, ow: int, name: str = "apool"):
    """NCHW adaptive average pooling (PyTorch bins: floor(i*H/O) .. ceil((i+1)*H/O))."""
    from tvm import te, tirx

    _, C, H, W = (int(v) for v in X.shape)
    kh = max(e - b for b, e in adaptive_bounds(H, oh))
    kw = max(e - b for b, e in adaptive_bounds(W, ow))
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def lo(i, size, out):
        return tirx.floordiv(i * size, out)

    def hi(i, size, out):
        return tirx.floordiv((i + 1) * size + out - 1, out)

    def body(n, c, y, x):
        y0, x0 = lo(y, H, oh), lo(x, W, ow)
        inside = te.all(y0 + ry < hi(y, H, oh), x0 + rx < hi(x, W, ow))
        return te.sum(te.if_then_else(inside, X[n, c, y0 + ry, x0 + rx], tirx.const(0.0, "float32")), axis=[ry, rx])
    S = te.compute((1, C, oh, ow), body, name=f"{name}_sum")
    return te.compute((1, C, oh, ow), lambda n, c, y, x: S[n, c, y, x] / (
        (hi(y, H, oh) - lo(y, H, oh)) * (hi(x, W, ow) - lo(x, W, ow))).astype("float32"), name=name)


def adaptive_avg_ref(x: np.ndarray, oh: int, ow: int) -> np.ndarray:
    _, C, H, W = x.shape
    y = np.zeros((1, C, oh, ow))
    for i, (a, b) in enumerate(adaptive_bounds(H, oh)):
        for j, (c0, c1) in enumerate(adaptive_bounds(W, ow)):
            y[:, :, i, j] = x[:, :, a:b, c0:c1].astype(np.float64).mean(axis=(2, 3))
    return y
