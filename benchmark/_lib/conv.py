"""Convolution definitions in TE with vectorised NumPy references.

One generic conv2d covers regular, strided, dilated, grouped and depthwise convolution in NHWC
(weights HWIO: KH, KW, Cin/groups, Cout) and NCHW (weights OIHW). Padding is explicit (top,
bottom, left, right) so TF/Keras 'same' padding with an even kernel or stride 2 on an even size
(asymmetric) is represented exactly. Integer inputs subtract a zero point before the multiply
(TFLite int8 semantics), with padding contributing zero after the subtraction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Pads = tuple[int, int, int, int]  # top, bottom, left, right


def same_pads(size_hw: tuple[int, int], k_hw: tuple[int, int], stride: int, dilation: int = 1) -> Pads:
    """TensorFlow 'SAME' padding: extra pixel goes after (bottom/right)."""
    out: list[int] = []
    for size, k in zip(size_hw, k_hw):
        o = -(-size // stride)
        total = max((o - 1) * stride + (k - 1) * dilation + 1 - size, 0)
        out += [total // 2, total - total // 2]
    return out[0], out[1], out[2], out[3]


@dataclass(frozen=True)
class ConvSpec:
    h: int
    w: int
    cin: int
    cout: int
    kh: int
    kw: int
    stride: int = 1
    pads: Pads = (0, 0, 0, 0)
    dilation: int = 1
    groups: int = 1
    layout: str = "NHWC"

    @property
    def oh(self) -> int:
        return (self.h + self.pads[0] + self.pads[1] - self.dilation * (self.kh - 1) - 1) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + self.pads[2] + self.pads[3] - self.dilation * (self.kw - 1) - 1) // self.stride + 1

    @property
    def x_shape(self) -> tuple[int, ...]:
        return (1, self.h, self.w, self.cin) if self.layout == "NHWC" else (1, self.cin, self.h, self.w)

    @property
    def w_shape(self) -> tuple[int, ...]:
        cg = self.cin // self.groups
        return (self.kh, self.kw, cg, self.cout) if self.layout == "NHWC" else (self.cout, cg, self.kh, self.kw)

    @property
    def y_shape(self) -> tuple[int, ...]:
        return (1, self.oh, self.ow, self.cout) if self.layout == "NHWC" else (1, self.cout, self.oh, self.ow)

    @property
    def macs(self) -> int:
        return self.oh * self.ow * self.cout * self.kh * self.kw * (self.cin // self.groups)


def same(h: int, w: int, cin: int, cout: int, k: int | tuple[int, int], stride: int = 1, *, dilation: int = 1,
         groups: int = 1, layout: str = "NHWC") -> ConvSpec:
    kh, kw = (k, k) if isinstance(k, int) else k
    return ConvSpec(h, w, cin, cout, kh, kw, stride, same_pads((h, w), (kh, kw), stride, dilation), dilation,
                    groups, layout)


def conv2d_te(X, W, s: ConvSpec, acc_dtype: str = "float32", x_zero_point: int | None = None, name: str = "conv",
              w_zero_point: int | None = None):
    """Return the conv accumulator tensor (acc_dtype). X/W are TE tensors shaped per `s`."""
    from tvm import te, tirx

    pt, pb, pl, pr = s.pads
    nhwc = s.layout == "NHWC"
    zp = None if x_zero_point is None else tirx.const(x_zero_point, acc_dtype)

    def xval(*idx):
        v = X(*idx).astype(acc_dtype)
        return v - zp if zp is not None else v

    if any(s.pads):
        ph, pw = s.h + pt + pb, s.w + pl + pr
        if nhwc:
            P = te.compute((1, ph, pw, s.cin), lambda n, y, x, c: te.if_then_else(
                te.all(y >= pt, y < pt + s.h, x >= pl, x < pl + s.w), xval(n, y - pt, x - pl, c),
                tirx.const(0, acc_dtype)), name=f"{name}_pad")
        else:
            P = te.compute((1, s.cin, ph, pw), lambda n, c, y, x: te.if_then_else(
                te.all(y >= pt, y < pt + s.h, x >= pl, x < pl + s.w), xval(n, c, y - pt, x - pl),
                tirx.const(0, acc_dtype)), name=f"{name}_pad")
        pval = P
    else:
        pval = xval
    cg, og = s.cin // s.groups, s.cout // s.groups
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, s.kh), name="ry")
    rx = te.reduce_axis((0, s.kw), name="rx")
    st, d = s.stride, s.dilation
    wzp = None if w_zero_point is None else tirx.const(w_zero_point, acc_dtype)

    def wval(*idx):
        v = W(*idx).astype(acc_dtype)
        return v - wzp if wzp is not None else v
    if nhwc:
        def body(n, y, x, o):
            ci = (o // og) * cg + rc if s.groups > 1 else rc
            return te.sum(pval(n, y * st + ry * d, x * st + rx * d, ci) * wval(ry, rx, rc, o),
                          axis=[ry, rx, rc])
    else:
        def body(n, o, y, x):
            ci = (o // og) * cg + rc if s.groups > 1 else rc
            return te.sum(pval(n, ci, y * st + ry * d, x * st + rx * d) * wval(o, rc, ry, rx),
                          axis=[rc, ry, rx])
    return te.compute(s.y_shape, body, name=name)


def conv2d_ref(x: np.ndarray, w: np.ndarray, s: ConvSpec, x_zero_point: int = 0, w_zero_point: int = 0) -> np.ndarray:
    """float64 result (exact for int8 operands: all partial sums stay far below 2**53)."""
    xf = x.astype(np.float64) - x_zero_point
    wf = w.astype(np.float64) - w_zero_point
    if s.layout == "NCHW":
        xf = xf.transpose(0, 2, 3, 1)
        wf = wf.transpose(2, 3, 1, 0)  # OIHW -> HWIO
    pt, pb, pl, pr = s.pads
    xp = np.pad(xf, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    g, cg, og = s.groups, s.cin // s.groups, s.cout // s.groups
    y = np.zeros((1, s.oh, s.ow, g, og))
    wg = wf.reshape(s.kh, s.kw, cg, g, og)
    for i in range(s.kh):
        for j in range(s.kw):
            y0, x0 = i * s.dilation, j * s.dilation
            win = xp[:, y0:y0 + s.stride * (s.oh - 1) + 1:s.stride, x0:x0 + s.stride * (s.ow - 1) + 1:s.stride, :]
            win = win.reshape(1, s.oh, s.ow, g, cg)
            if g == 1:
                y[..., 0, :] += win[..., 0, :] @ wg[i, j, :, 0, :]
            elif cg == 1:
                y += win[..., :, 0:1] * wg[i, j, 0][None, None, None]
            else:
                y += np.einsum("nhwgc,cgo->nhwgo", win, wg[i, j], optimize=True)
    y = y.reshape(1, s.oh, s.ow, s.cout)
    return y.transpose(0, 3, 1, 2) if s.layout == "NCHW" else y


@dataclass(frozen=True)
class TConvSpec:
    """Transposed conv (PyTorch semantics): out = (in-1)*stride - pad_begin - pad_end + k + output_padding."""
    h: int
    w: int
    cin: int
    cout: int
    k: int
    stride: int
    pad: int
    output_padding: int = 0
    layout: str = "NHWC"

    @property
    def oh(self) -> int:
        return (self.h - 1) * self.stride - 2 * self.pad + self.k + self.output_padding

    @property
    def ow(self) -> int:
        return (self.w - 1) * self.stride - 2 * self.pad + self.k + self.output_padding

    @property
    def x_shape(self):
        return (1, self.h, self.w, self.cin) if self.layout == "NHWC" else (1, self.cin, self.h, self.w)

    @property
    def w_shape(self):  # NHWC: (KH, KW, Cin, Cout); NCHW: PyTorch (Cin, Cout, KH, KW)
        return (self.k, self.k, self.cin, self.cout) if self.layout == "NHWC" else (self.cin, self.cout, self.k, self.k)

    @property
    def y_shape(self):
        return (1, self.oh, self.ow, self.cout) if self.layout == "NHWC" else (1, self.cout, self.oh, self.ow)

    @property
    def macs(self) -> int:
        return self.h * self.w * self.cin * self.cout * self.k * self.k


def tconv2d_te(X, W, s: TConvSpec, name: str = "tconv"):
    """Gather form: out[o] sums x[(o + pad - k) / stride] over taps where the division is exact."""
    from tvm import te, tirx

    rc = te.reduce_axis((0, s.cin), name="rc")
    ry = te.reduce_axis((0, s.k), name="ry")
    rx = te.reduce_axis((0, s.k), name="rx")
    st = s.stride

    def tap(y, x):
        ty, tx = y + s.pad - ry, x + s.pad - rx
        ok = te.all(ty >= 0, tx >= 0, tirx.floormod(ty, st) == 0, tirx.floormod(tx, st) == 0,
                    tirx.floordiv(ty, st) < s.h, tirx.floordiv(tx, st) < s.w)
        return ok, tirx.floordiv(ty, st), tirx.floordiv(tx, st)

    if s.layout == "NHWC":
        def body(n, y, x, o):
            ok, iy, ix = tap(y, x)
            return te.sum(te.if_then_else(ok, X[n, iy, ix, rc] * W[ry, rx, rc, o], tirx.const(0.0, "float32")),
                          axis=[ry, rx, rc])
    else:
        def body(n, o, y, x):
            ok, iy, ix = tap(y, x)
            return te.sum(te.if_then_else(ok, X[n, rc, iy, ix] * W[rc, o, ry, rx], tirx.const(0.0, "float32")),
                          axis=[rc, ry, rx])
    return te.compute(s.y_shape, body, name=name)


def tconv2d_ref(x: np.ndarray, w: np.ndarray, s: TConvSpec) -> np.ndarray:
    """Scatter form (independent of the TE gather form): each input pixel adds x*w into a k x k patch."""
    xf, wf = x.astype(np.float64), w.astype(np.float64)
    if s.layout == "NCHW":
        xf, wf = xf.transpose(0, 2, 3, 1), wf.transpose(2, 3, 0, 1)
    full_h, full_w = (s.h - 1) * s.stride + s.k + s.output_padding, (s.w - 1) * s.stride + s.k + s.output_padding
    y = np.zeros((1, full_h, full_w, s.cout))
    for i in range(s.k):
        for j in range(s.k):
            y[:, i:i + s.stride * (s.h - 1) + 1:s.stride, j:j + s.stride * (s.w - 1) + 1:s.stride, :] += xf @ wf[i, j]
    y = y[:, s.pad:s.pad + s.oh, s.pad:s.pad + s.ow, :]
    return y.transpose(0, 3, 1, 2) if s.layout == "NCHW" else y


def dense_te(X, W, acc_dtype: str = "float32", x_zero_point: int | None = None, name: str = "dense"):
    """X (M, K) times W (K, N) -> (M, N) accumulator."""
    from tvm import te, tirx

    m, k = X.shape
    n = W.shape[1]
    r = te.reduce_axis((0, k), name="rk")
    zp = tirx.const(x_zero_point or 0, acc_dtype)
    return te.compute((m, n), lambda i, j: te.sum((X[i, r].astype(acc_dtype) - zp) * W[r, j].astype(acc_dtype),
                                                  axis=r), name=name)
