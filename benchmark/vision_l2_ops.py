"""Dual-mode operator set for L2 fused blocks (no tasks here).

A block is written once against this small API and run twice: with ``TeOps`` it builds the TE
definition (one te.compute per op, fp32 internally, NHWC), with ``NpOps`` it computes the reference
from the NumPy primitives in benchmark/_lib. The primitives on both sides are independent
implementations (e.g. TE gather-form conv vs NumPy per-tap matmul); only the wiring is shared,
which is what makes multi-op blocks cheap to add and hard to get inconsistent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from benchmark._lib import inp
from benchmark._lib.conv import ConvSpec, TConvSpec, conv2d_ref, conv2d_te, tconv2d_ref, tconv2d_te
from benchmark._lib.elementwise import apply_act, apply_act_np
from benchmark._lib.image import align_corners_np, align_corners_te, bilinear_np, bilinear_te
from benchmark._lib.pool import pool2d_ref, pool2d_te
from benchmark._lib.quant import (clamp_te, fixed_mul_np, fixed_mul_te, quantize_np, quantize_te, requant_np, requant_te,
                                  rounding_div_np, rounding_div_te)
from leka.tasks.task import ArgSpec, generate


def _f(v):
    from tvm import tirx

    return tirx.const(v, "float32")


class TeOps:
    """Builds TE tensors; every op is one named stage."""

    def __init__(self) -> None:
        self.n = 0

    def _name(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def _ew(self, shape, fn, base):
        from tvm import te

        return te.compute(tuple(int(s) for s in shape), fn, name=self._name(base))

    @staticmethod
    def shape(x):
        return tuple(int(s) for s in x.shape)

    def to_f32(self, x):
        return x if str(x.dtype) == "float32" else self._ew(x.shape, lambda *i: x(*i).astype("float32"), "f32_")

    def cast(self, x, dtype):
        return x if str(x.dtype) == dtype else self._ew(x.shape, lambda *i: x(*i).astype(dtype), "cast")

    def conv(self, x, w, s: ConvSpec):
        return conv2d_te(x, w, s, "float32", name=self._name("conv"))

    def tconv(self, x, w, s: TConvSpec):
        return tconv2d_te(x, w, s, name=self._name("tconv"))

    def bias(self, x, b):
        return self._ew(x.shape, lambda *i: x(*i) + b[i[-1]], "bias")

    def bn(self, x, g, b, m, v, eps=1e-3):
        return self._ew(x.shape, lambda *i: (x(*i) - m[i[-1]]) * (g[i[-1]] / _sqrt(v[i[-1]] + _f(eps))) + b[i[-1]], "bn")

    def act(self, x, name):
        return self._ew(x.shape, lambda *i: apply_act(name, x(*i)), name)

    def add(self, a, b):
        return self._ew(a.shape, lambda *i: a(*i) + b(*i), "add")

    def mul_channel(self, x, s):  # s: (1, C)
        return self._ew(x.shape, lambda *i: x(*i) * s[0, i[-1]], "scale")

    def gap(self, x, kind="avg"):
        from tvm import te

        _, h, w, c = self.shape(x)
        ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
        red = te.max if kind == "max" else te.sum
        s = te.compute((1, c), lambda n, k: red(x[n, ry, rx, k], axis=[ry, rx]), name=self._name("gpool"))
        return s if kind == "max" else self._ew((1, c), lambda n, k: s[n, k] / _f(float(h * w)), "gap")

    def dense(self, v, w):
        from tvm import te

        k, n = self.shape(w)
        r = te.reduce_axis((0, k), "rk")
        return te.compute((1, n), lambda i, j: te.sum(v[i, r] * w[r, j], axis=r), name=self._name("dense"))

    def softmax(self, v):
        from tvm import te

        _, n = self.shape(v)
        r1, r2 = te.reduce_axis((0, n), "r1"), te.reduce_axis((0, n), "r2")
        m = te.compute((1,), lambda i: te.max(v[0, r1], axis=r1), name=self._name("smax"))
        e = self._ew((1, n), lambda i, j: te.exp(v[i, j] - m[0]), "exp")
        s = te.compute((1,), lambda i: te.sum(e[0, r2], axis=r2), name=self._name("ssum"))
        return self._ew((1, n), lambda i, j: e[i, j] / s[0], "softmax")

    def concat(self, xs: Sequence[Any]):
        from tvm import te

        offs = np.cumsum([0] + [self.shape(x)[3] for x in xs]).tolist()
        shape = self.shape(xs[0])[:3] + (offs[-1],)

        def f(n, y, x, c):
            val = xs[0][n, y, x, c]
            for k in range(1, len(xs)):
                val = te.if_then_else(c >= offs[k], xs[k][n, y, x, c - offs[k]], val)
            return val
        return self._ew(shape, f, "concat")

    def slice_c(self, x, start, size):
        return self._ew(self.shape(x)[:3] + (size,), lambda n, y, xx, c: x[n, y, xx, c + start], "slice")

    def shuffle(self, x, g):
        c = self.shape(x)[3]
        return self._ew(x.shape, lambda n, y, xx, k: x[n, y, xx, (k % g) * (c // g) + k // g], "shuffle")

    def maxpool(self, x, k, stride, pads):
        return pool2d_te(x, "max", k, stride, pads, "NHWC", name=self._name("maxpool"))

    def resize_ac(self, x, oh, ow):
        _, h, w, c = self.shape(x)
        return self._ew((1, oh, ow, c), lambda n, y, xx, k: bilinear_te(
            lambda a, b: x[n, a, b, k], align_corners_te(y, h, oh), align_corners_te(xx, w, ow), h, w), "resize")

    def argmax(self, x):
        from tvm import te, tirx

        shape = self.shape(x)
        c = shape[-1]
        k1, k2 = te.reduce_axis((0, c), "k1"), te.reduce_axis((0, c), "k2")
        m = te.compute(shape[:-1], lambda *i: te.max(x(*i, k1), axis=k1), name=self._name("vmax"))
        return te.compute(shape[:-1], lambda *i: te.min(te.if_then_else(x(*i, k2) == m(*i), k2, tirx.const(c, "int32")),
                                                         axis=k2), name=self._name("argmax"))

    # int8 (TFLite) ops
    def conv_i8(self, x, w, s: ConvSpec, zx: int):
        return conv2d_te(x, w, s, "int32", zx, name=self._name("qconv"))

    def dense_i8(self, v, w, zx: int):
        from tvm import te, tirx

        k, n = self.shape(w)
        r = te.reduce_axis((0, k), "rk")
        return te.compute((1, n), lambda i, j: te.sum((v[i, r].astype("int32") - tirx.const(zx, "int32"))
                                                      * w[r, j].astype("int32"), axis=r), name=self._name("qdense"))

    def requant(self, acc, b, m, shift, zp, qmin=-128, qmax=127):
        """int32 acc + bias[c], per-channel multiplier m[c], -> int8 in [qmin, qmax]."""
        return self._ew(acc.shape, lambda *i: requant_te(acc(*i) + b[i[-1]], m[i[-1]], shift, zp, qmin, qmax), "requant")

    def add_i8(self, a, b, za, zb, ma, mb, mo, zo, qmin=-128, qmax=127, left_shift=20):
        """TFLite int8 ADD: both inputs shifted left, rescaled to a common scale, summed, rescaled."""
        from tvm import tirx

        def f(*i):
            va = fixed_mul_te((a(*i).astype("int64") - tirx.const(za, "int64")) * tirx.const(1 << left_shift, "int64"), *ma)
            vb = fixed_mul_te((b(*i).astype("int64") - tirx.const(zb, "int64")) * tirx.const(1 << left_shift, "int64"), *mb)
            return clamp_te(fixed_mul_te(va + vb, *mo) + tirx.const(zo, "int64"), qmin, qmax)
        return self._ew(a.shape, f, "qadd")

    def gap_i8(self, x):
        from tvm import te

        _, h, w, c = self.shape(x)
        ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
        s = te.compute((1, c), lambda n, k: te.sum(x[n, ry, rx, k].astype("int32"), axis=[ry, rx]), name=self._name("qsum"))
        return self._ew((1, c), lambda n, k: rounding_div_te(s[n, k], h * w).astype("int8"), "qgap")

    def dequant_acc(self, acc, b, scale):
        return self._ew(acc.shape, lambda *i: (acc(*i) + b[i[-1]]).astype("float32") * scale[i[-1]], "dequant")

    def quantize(self, x, inv_scale, zp):
        return self._ew(x.shape, lambda *i: quantize_te(x(*i), inv_scale, zp), "quant")

    def lut(self, x, table):
        from tvm import tirx

        return self._ew(x.shape, lambda *i: table[x(*i).astype("int32") + tirx.const(128, "int32")], "lut")


def _sqrt(v):
    from tvm import te

    return te.sqrt(v)


class NpOps:
    """Same API on NumPy float64 (int64 for int8 paths)."""

    @staticmethod
    def shape(x):
        return x.shape

    def to_f32(self, x):
        return np.asarray(x, np.float64)

    def cast(self, x, dtype):
        return x

    def conv(self, x, w, s):
        return conv2d_ref(x, w, s)

    def tconv(self, x, w, s):
        return tconv2d_ref(x, w, s)

    def bias(self, x, b):
        return x + b

    def bn(self, x, g, b, m, v, eps=1e-3):
        return (x - m) * (g / np.sqrt(v + eps)) + b

    def act(self, x, name):
        return apply_act_np(name, x)

    def add(self, a, b):
        return a + b

    def mul_channel(self, x, s):
        return x * s.reshape(1, 1, 1, -1)

    def gap(self, x, kind="avg"):
        return x.max(axis=(1, 2)) if kind == "max" else x.mean(axis=(1, 2))

    def dense(self, v, w):
        return v @ w

    def softmax(self, v):
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def concat(self, xs):
        return np.concatenate(xs, axis=3)

    def slice_c(self, x, start, size):
        return x[..., start:start + size]

    def shuffle(self, x, g):
        n, h, w, c = x.shape
        return x.reshape(n, h, w, g, c // g).swapaxes(3, 4).reshape(n, h, w, c)

    def maxpool(self, x, k, stride, pads):
        return pool2d_ref(x, "max", k, stride, pads, "NHWC")

    def resize_ac(self, x, oh, ow):
        _, h, w, _ = x.shape
        fy, fx = np.meshgrid(align_corners_np(h, oh), align_corners_np(w, ow), indexing="ij")
        return bilinear_np(x[0], fy, fx)[None]

    def argmax(self, x):
        return np.argmax(x, axis=-1)

    def conv_i8(self, x, w, s, zx):
        return conv2d_ref(x, w, s, zx)

    def dense_i8(self, v, w, zx):
        return (v.astype(np.float64) - zx) @ w.astype(np.float64)

    def requant(self, acc, b, m, shift, zp, qmin=-128, qmax=127):
        return requant_np(np.rint(acc).astype(np.int64) + b.astype(np.int64), m, shift, zp, qmin, qmax).astype(np.int64)

    def add_i8(self, a, b, za, zb, ma, mb, mo, zo, qmin=-128, qmax=127, left_shift=20):
        va = fixed_mul_np((np.asarray(a, np.int64) - za) << left_shift, *ma)
        vb = fixed_mul_np((np.asarray(b, np.int64) - zb) << left_shift, *mb)
        return np.clip(fixed_mul_np(va + vb, *mo) + zo, qmin, qmax)

    def gap_i8(self, x):
        return rounding_div_np(np.asarray(x, np.int64).sum(axis=(1, 2)), x.shape[1] * x.shape[2])

    def dequant_acc(self, acc, b, scale):
        return (acc + b) * scale.astype(np.float32).astype(np.float64)

    def quantize(self, x, inv_scale, zp):
        return quantize_np(np.asarray(x, np.float32), inv_scale, zp).astype(np.int64)

    def lut(self, x, table):
        return np.asarray(table)[np.asarray(x, np.int64) + 128].astype(np.int64)


# --- task plumbing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class P:
    """A block input: kind x (activation), w (weight, fan_in), b (bias), g/beta/mean/var (BN), raw."""
    name: str
    shape: tuple[int, ...]
    kind: str = "w"
    fan_in: int = 1
    dtype: str = "float32"
    low: int | None = None
    high: int | None = None

    def spec(self) -> ArgSpec:
        return inp(self.name, self.shape, self.dtype, low=self.low, high=self.high)


def draw(params: Sequence[P], rng: np.random.Generator, dist: str) -> list[np.ndarray]:
    """Trained-network-like scales: He-scaled weights, small biases, sane BN statistics."""
    outs = []
    for p in params:
        if p.kind == "x" or np.dtype(p.dtype).kind in "iu":
            a = generate(p.spec(), rng, dist)
        elif p.kind == "w":
            a = rng.standard_normal(p.shape) * math.sqrt(2.0 / p.fan_in)
        elif p.kind == "wraw":
            a = rng.standard_normal(p.shape)
        elif p.kind in ("b", "beta", "mean"):
            a = rng.normal(0.0, 0.2, p.shape)
        elif p.kind == "g":
            a = rng.uniform(0.5, 1.5, p.shape)
        elif p.kind == "var":
            a = rng.uniform(0.2, 2.0, p.shape)
        else:
            raise ValueError(p.kind)
        outs.append(np.ascontiguousarray(np.asarray(a).astype(p.dtype)))
    return outs


def block_def(params: Sequence[P], block: Callable, out_dtype: str):
    from tvm import te

    ops = TeOps()
    phs = [te.placeholder(p.shape, p.dtype, name=p.name) for p in params]
    vals = [ops.to_f32(ph) if p.dtype == "float16" else ph for ph, p in zip(phs, params)]
    res = block(ops, *vals)
    res = res if isinstance(res, (list, tuple)) else [res]
    outs = [ops.cast(r, out_dtype) if str(r.dtype).startswith("float") else r for r in res]
    return te.create_prim_func(phs + list(outs))


def block_ref(block: Callable, *arrays):
    conv = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    return block(NpOps(), *conv)
