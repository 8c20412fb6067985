"""L1 int8 quantisation operators (TFLite quantisation spec): quantize / dequantize, requantize,
int8 conv / depthwise / FC / uint8-asymmetric conv with int32 accumulators, int8 add / mul with
rescale, pooling, LUT activations, clamp and dynamic row-wise quantisation. Integer outputs must
match exactly; float outputs use the fp32 defaults."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag
from benchmark._lib.conv import ConvSpec, conv2d_ref, conv2d_te, same
from benchmark._lib.quant import (MCU_SRAM_BYTES, bias_input, clamp_te, fixed_mul_np, fixed_mul_te, mult_input, quantize_multiplier,
                                  quantize_np, quantize_te, requant_np, requant_te, rounding_div_np, rounding_div_te,
                                  w8_input)
from leka.tasks.task import Task

ZX, ZY = -3, 5  # activation zero points used throughout (non-zero on purpose: kernels must apply them)
U8_ZX, U8_ZW = 128, 117  # legacy uint8 MobileNet: input zp 128, weight zp ~ 117


def _c(v, dt):
    from tvm import tirx

    return tirx.const(v, dt)


def _pf(*ts):
    from tvm import te

    return te.create_prim_func(list(ts))


def _ph(shape, dtype, name):
    from tvm import te

    return te.placeholder(shape, dtype, name=name)


def _cax(s: ConvSpec) -> int:
    return 3 if s.layout == "NHWC" else 1


# --- convolution / FC accumulators ---------------------------------------------------------------
def conv_acc_def(s: ConvSpec, xdt: str, zx: int, zw: int | None):
    from tvm import te

    X, W, B = _ph(s.x_shape, xdt, "X"), _ph(s.w_shape, xdt, "W"), _ph((s.cout,), "int32", "B")
    acc = conv2d_te(X, W, s, "int32", zx, w_zero_point=zw)
    ax = _cax(s)
    return _pf(X, W, B, te.compute(s.y_shape, lambda *i: acc(*i) + B[i[ax]], name="Y"))


def conv_acc_ref(x, w, b, s: ConvSpec, zx: int, zw: int):
    shape = [1, 1, 1, 1]
    shape[_cax(s)] = -1
    return conv2d_ref(x, w, s, zx, zw) + b.reshape(shape)


def dense_acc_def(k, n):
    from tvm import te

    X, W, B = _ph((1, k), "int8", "X"), _ph((k, n), "int8", "W"), _ph((n,), "int32", "B")
    r = te.reduce_axis((0, k), "rk")
    acc = te.compute((1, n), lambda i, j: te.sum((X[i, r].astype("int32") - _c(ZX, "int32")) * W[r, j].astype("int32"),
                                                 axis=r), name="acc")
    return _pf(X, W, B, te.compute((1, n), lambda i, j: acc[i, j] + B[j], name="Y"))


# --- requantisation and (de)quantisation ---------------------------------------------------------
def requant_def(shape, per_channel, shift):
    from tvm import te

    A = _ph(shape, "int32", "acc")
    M = _ph((shape[-1] if per_channel else 1,), "int32", "M")
    Y = te.compute(shape, lambda *i: requant_te(A(*i), M[i[-1]] if per_channel else M[0], shift, ZY), name="Y")
    return _pf(A, M, Y)


def requant_ref(a, m, per_channel, shift):
    return requant_np(a, m if per_channel else m[0], shift, ZY)


def quantize_def(shape, inv_scale, zp):
    from tvm import te

    X = _ph(shape, "float32", "X")
    return _pf(X, te.compute(shape, lambda *i: quantize_te(X(*i), inv_scale, zp), name="Y"))


def dequant_def(shape, scale, zp, per_channel):
    from tvm import te

    Q = _ph(shape, "int8", "Q")
    if per_channel:
        S = _ph((shape[-1],), "float32", "scale")
        return _pf(Q, S, te.compute(shape, lambda *i: Q(*i).astype("float32") * S[i[-1]], name="Y"))
    return _pf(Q, te.compute(shape, lambda *i: (Q(*i).astype("int32") - _c(zp, "int32")).astype("float32")
                             * _c(scale, "float32"), name="Y"))


def rescale_def(shape, mult, shift):
    from tvm import te

    X = _ph(shape, "int8", "X")
    return _pf(X, te.compute(shape, lambda *i: clamp_te(
        fixed_mul_te(X(*i).astype("int64") - _c(ZX, "int64"), mult, shift) + _c(ZY, "int64")), name="Y"))


# --- binary ops with rescale (TFLite add / mul) --------------------------------------------------
ADD_SCALES = (0.05, 0.08, 0.1)  # x, y, out
LEFT_SHIFT = 20


def _add_params():
    sx, sy, so = ADD_SCALES
    twice = 2 * max(sx, sy)
    return quantize_multiplier(sx / twice), quantize_multiplier(sy / twice), \
        quantize_multiplier(twice / ((1 << LEFT_SHIFT) * so))


def add_i8_def(shape):
    from tvm import te

    (mx, sx), (my, sy), (mo, so) = _add_params()
    X, Yb = _ph(shape, "int8", "X"), _ph(shape, "int8", "Y2")

    def f(*i):
        a = fixed_mul_te((X(*i).astype("int64") - _c(ZX, "int64")) * _c(1 << LEFT_SHIFT, "int64"), mx, sx)
        b = fixed_mul_te((Yb(*i).astype("int64") - _c(ZX, "int64")) * _c(1 << LEFT_SHIFT, "int64"), my, sy)
        return clamp_te(fixed_mul_te(a + b, mo, so) + _c(ZY, "int64"))
    return _pf(X, Yb, te.compute(shape, f, name="Y"))


def add_i8_ref(x, y):
    (mx, sx), (my, sy), (mo, so) = _add_params()
    a = fixed_mul_np((x.astype(np.int64) - ZX) << LEFT_SHIFT, mx, sx)
    b = fixed_mul_np((y.astype(np.int64) - ZX) << LEFT_SHIFT, my, sy)
    return np.clip(fixed_mul_np(a + b, mo, so) + ZY, -128, 127)


MUL_REAL = 0.05 * (1 / 256) / 0.055  # x_scale * gate_scale (TFLite logistic output: 1/256, zp -128) / out_scale


def mul_i8_def(shape):
    from tvm import te

    m, s = quantize_multiplier(MUL_REAL)
    X, G = _ph(shape, "int8", "X"), _ph((shape[-1],), "int8", "gate")
    return _pf(X, G, te.compute(shape, lambda *i: clamp_te(fixed_mul_te(
        (X(*i).astype("int64") - _c(ZX, "int64")) * (G[i[-1]].astype("int64") + _c(128, "int64")), m, s)
        + _c(ZY, "int64")), name="Y"))


def mul_i8_ref(x, g):
    m, s = quantize_multiplier(MUL_REAL)
    return np.clip(fixed_mul_np((x.astype(np.int64) - ZX) * (g.astype(np.int64) + 128), m, s) + ZY, -128, 127)


# --- pooling, LUT, clamp, dynamic quantisation -----------------------------------------------------
def avgpool_i8_def(shape, k, stride):
    from tvm import te

    n, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    X = _ph(shape, "int8", "X")
    ry, rx = te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    S = te.compute((n, oh, ow, c), lambda b, y, x, ch: te.sum(X[b, y * stride + ry, x * stride + rx, ch].astype("int32"),
                                                              axis=[ry, rx]), name="sum")
    return _pf(X, te.compute((n, oh, ow, c), lambda *i: rounding_div_te(S(*i), k * k).astype("int8"), name="Y"))


def avgpool_i8_ref(x, k, stride):
    n, h, w, c = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    acc = sum(x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride].astype(np.int64)
              for i in range(k) for j in range(k))
    return rounding_div_np(acc, k * k)


def maxpool_i8_def(shape, k, stride):
    from tvm import te

    n, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    X = _ph(shape, "int8", "X")
    ry, rx = te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    return _pf(X, te.compute((n, oh, ow, c), lambda b, y, x, ch: te.max(X[b, y * stride + ry, x * stride + rx, ch],
                                                                        axis=[ry, rx]), name="Y"))


def maxpool_i8_ref(x, k, stride):
    n, h, w, c = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    return np.maximum.reduce([x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                              for i in range(k) for j in range(k)])


def lut_def(shape):
    from tvm import te

    X, L = _ph(shape, "int8", "X"), _ph((256,), "int8", "lut")
    return _pf(X, L, te.compute(shape, lambda *i: L[X(*i).astype("int32") + _c(128, "int32")], name="Y"))


def clamp_def(shape, lo, hi):
    from tvm import te

    X = _ph(shape, "int8", "X")
    return _pf(X, te.compute(shape, lambda *i: te.min(te.max(X(*i), _c(lo, "int8")), _c(hi, "int8")), name="Y"))


def dynq_def(rows, k):
    """Per-row symmetric dynamic quantisation: scale = max|x|/127, q = round(x * (127/max|x|))."""
    from benchmark._lib.quant import round_half_away_te
    from tvm import te

    X = _ph((rows, k), "float32", "X")
    r = te.reduce_axis((0, k), "rk")
    A = te.compute((rows,), lambda i: te.max(te.abs(X[i, r]), axis=r), name="absmax")
    Q = te.compute((rows, k), lambda i, j: te.min(te.max(round_half_away_te(X[i, j] * (_c(127.0, "float32") / A[i])),
                                                         _c(-127.0, "float32")), _c(127.0, "float32")).astype("int8"),
                   name="Q")
    S = te.compute((rows,), lambda i: A[i] / _c(127.0, "float32"), name="scale")
    return _pf(X, Q, S)


def dynq_ref(x):
    a = np.abs(x).max(axis=1, keepdims=True).astype(np.float32)
    q = np.clip(np.trunc(x * (np.float32(127.0) / a) + np.copysign(np.float32(0.5), x)), -127, 127)
    return q.astype(np.int8), (a[:, 0] / np.float32(127.0)).astype(np.float32)


def _q(pattern, tag_shape, args, build, ref, flops, desc, mcu=False, **kw) -> Task:
    if mcu:
        kw["memory_budget_bytes"] = MCU_SRAM_BYTES
    return make_task(level=1, pattern=pattern, tag=shape_tag(tag_shape), domain="vision", args=args, build=build,
                     reference=ref, flops=flops, description=desc, dtype="int8", tags=("int8", "quantized"), **kw)


CONVS_I8 = {  # pattern -> [(spec, source, carries the MCU SRAM budget)]
    "conv2d_3x3_s1_nhwc_i8acc": [(same(32, 32, 16, 16, 3), "ResNet-8 int8 conv 3x3", False),
                                 (same(8, 8, 64, 64, 3), "ResNet-8 int8 stack-3 conv 3x3", True)],
    "conv2d_3x3_s2_nhwc_i8acc": [(same(96, 96, 3, 8, 3, 2), "VWW int8 stem 96x96x3 -> 48x48x8", False),
                                 (same(16, 16, 32, 64, 3, 2), "ResNet-8 int8 stack-3 first conv s2", True)],
    "conv2d_1x1_nhwc_i8acc": [(same(48, 48, 8, 16, 1), "VWW int8 skinny pointwise", False),
                              (same(6, 6, 128, 128, 1), "VWW int8 deep-narrow pointwise 6x6", True)],
    "dwconv2d_3x3_s1_nhwc_i8acc": [(same(25, 5, 64, 64, 3, groups=64), "DS-CNN int8 depthwise 25x5x64", True),
                                   (same(24, 24, 32, 32, 3, groups=32), "VWW int8 depthwise 24x24x32", True)],
    "dwconv2d_3x3_s2_nhwc_i8acc": [(same(48, 48, 16, 16, 3, 2, groups=16), "VWW int8 depthwise s2 48x48x16", False),
                                   (same(12, 12, 64, 64, 3, 2, groups=64), "VWW int8 depthwise s2 12x12x64", True)],
    "conv2d_10x4_s2_nhwc_i8acc": [(same(49, 10, 1, 64, (10, 4), 2), "DS-CNN-S int8 stem", True),
                                  (same(49, 10, 1, 172, (10, 4), 2), "DS-CNN-M int8 stem (172 filters)", True)],
}
CONVS_U8 = {
    "conv2d_3x3_s1_nhwc_u8acc": [(same(28, 28, 32, 32, 3), "legacy uint8 asymmetric conv 28x28x32 (zp_x 128, zp_w 117)",
                                  False),
                                 (same(14, 14, 64, 64, 3), "legacy uint8 asymmetric conv 14x14x64", False)],
}


def tasks() -> list[Task]:
    ts: list[Task] = []
    for table, xdt, zx, zw in ((CONVS_I8, "int8", ZX, None), (CONVS_U8, "uint8", U8_ZX, U8_ZW)):
        for pattern, entries in table.items():
            for s, src, mcu in entries:
                fan = s.kh * s.kw * s.cin // s.groups
                xa = inp("X", s.x_shape, xdt, low=0, high=256) if xdt == "uint8" else inp("X", s.x_shape, "int8")
                wa = inp("W", s.w_shape, "uint8", low=0, high=256) if xdt == "uint8" else w8_input("W", s.w_shape)
                ts.append(_q(pattern, (s.h, s.w, s.cin, s.cout), (xa, wa, bias_input("B", s.cout, fan),
                                                                  out("Y", s.y_shape, "int32")),
                             partial(conv_acc_def, s, xdt, zx, zw), partial(conv_acc_ref, s=s, zx=zx, zw=zw or 0),
                             2 * s.macs, f"{src}: int32 accumulator + bias, input zp {zx}"
                             + (f", weight zp {zw}" if zw else ", symmetric weights"), layout="NHWC",
                             mcu=mcu))
    for k, n, src in ((64, 12, "DS-CNN int8 classifier 64->12"), (1024, 1000, "MobileNetV1 int8 classifier 1024->1000")):
        ts.append(_q("dense_i8acc", (k, n), (inp("X", (1, k), "int8"), w8_input("W", (k, n)), bias_input("B", n, k),
                                              out("Y", (1, n), "int32")),
                     partial(dense_acc_def, k, n),
                     lambda x, w, b: (x.astype(np.float64) - ZX) @ w.astype(np.float64) + b, 2 * k * n,
                     f"{src}: int32 accumulator + bias", mcu=k == 64))
    acc_range = 1 << 16
    shift = max(0, round(math.log2(0.75 * acc_range / math.sqrt(3) / 40)))
    for pattern, per_channel, shapes in (
            ("requantize_i32_i8", False, [((1, 25, 5, 64), "DS-CNN layer output"), ((1, 12, 12, 64), "VWW layer output")]),
            ("requantize_i32_i8_per_channel", True, [((1, 48, 48, 16), "VWW per-channel requant"),
                                                     ((1, 6, 6, 128), "VWW per-channel requant 6x6x128")])):
        for shape, src in shapes:
            ts.append(_q(pattern, shape[1:], (inp("acc", shape, "int32", low=-acc_range, high=acc_range),
                                              mult_input("M", shape[-1] if per_channel else 1), out("Y", shape, "int8")),
                         partial(requant_def, shape, per_channel, shift),
                         partial(requant_ref, per_channel=per_channel, shift=shift), 4 * numel(shape),
                         f"{src}: fixed-point multiply (M in [2^30, 2^31), >> {31 + shift}, single rounding) + zp "
                         f"{ZY} + clamp", mcu=True))
    for shape, inv, src in (((1, 96, 96, 3), 40.0, "VWW int8 model input quantisation"),
                            ((1, 49, 10, 1), 25.0, "DS-CNN int8 MFCC input quantisation")):
        ts.append(_q("quantize_f32_i8", shape[1:], (inp("X", shape), out("Y", shape, "int8")),
                     partial(quantize_def, shape, inv, ZX), lambda x, inv=inv: quantize_np(x, inv, ZX), 3 * numel(shape),
                     f"{src}: round-half-away(x * {inv:g}) + zp {ZX}, clamp", mcu=True))
    for shape, scale, src in (((1, 2034, 91), 1 / 256, "SSD-MobileDet int8 score dequantisation"),
                              ((1, 1000), 0.08, "MobileNet int8 logits dequantisation")):
        ts.append(_q("dequantize_i8_f32", shape[1:], (inp("Q", shape, "int8"), out("Y", shape)),
                     partial(dequant_def, shape, scale, ZY, False),
                     lambda q, scale=scale: (q.astype(np.float64) - ZY) * np.float32(scale), 2 * numel(shape),
                     f"{src}: (q - {ZY}) * {scale:g}"))
    for shape, src in (((3, 3, 32, 64), "per-channel int8 conv weights -> fp32 (fallback path)"),
                       ((1024, 1000), "per-channel int8 FC weights -> fp32")):
        ts.append(_q("dequantize_i8_per_channel", shape, (w8_input("Q", shape), inp("scale", (shape[-1],), dist="positive"),
                                                          out("Y", shape)),
                     partial(dequant_def, shape, 0.0, 0, True), lambda q, s: q.astype(np.float64) * s, numel(shape), src))
    for shape, real, src in (((1, 28, 28, 58), 0.7, "ShuffleNetV2 int8 branch rescale before concat"),
                             ((1, 13, 13, 256), 0.35, "YOLO int8 route rescale 13x13x256")):
        m, sh = quantize_multiplier(real)
        ts.append(_q("rescale_i8_i8", shape[1:], (inp("X", shape, "int8"), out("Y", shape, "int8")),
                     partial(rescale_def, shape, m, sh),
                     lambda x, m=m, sh=sh: np.clip(fixed_mul_np(x.astype(np.int64) - ZX, m, sh) + ZY, -128, 127),
                     3 * numel(shape), f"{src}: requantise int8 -> int8 by {real:g}"))
    for shape, src in (((1, 32, 32, 16), "ResNet-8 int8 residual add"), ((1, 8, 8, 64), "ResNet-8 stack-3 int8 add")):
        ts.append(_q("add_i8_rescale", shape[1:], (inp("X", shape, "int8"), inp("Y2", shape, "int8"),
                                                   out("Y", shape, "int8")),
                     partial(add_i8_def, shape), add_i8_ref, 10 * numel(shape),
                     f"{src}: TFLite int8 ADD (left shift 20, rescale both inputs, scales {ADD_SCALES})", mcu=True))
    for shape, src in (((1, 14, 14, 96), "MobileNetV3 int8 SE gating multiply"),
                       ((1, 28, 28, 72), "MobileNetV3 int8 SE gating 28x28x72")):
        ts.append(_q("mul_i8_channel_gate", shape[1:], (inp("X", shape, "int8"), inp("gate", (shape[-1],), "int8"),
                                                        out("Y", shape, "int8")),
                     partial(mul_i8_def, shape), mul_i8_ref, 6 * numel(shape),
                     f"{src}: TFLite int8 MUL by a per-channel gate (gate zp -128)"))
    for pattern, k, stride, shapes in (
            ("avgpool2d_i8", 2, 2, [((1, 32, 32, 32), "int8 avgpool 2x2 s2"), ((1, 24, 24, 64), "int8 avgpool 24x24")]),
            ("global_avgpool_i8", None, None, [((1, 8, 8, 64), "ResNet-8 int8 head pool"),
                                               ((1, 7, 7, 256), "MobileNetV1-0.25@224 int8 head pool")])):
        for shape, src in shapes:
            kk = k or shape[1]  # global pools here are square
            oshape = (1, (shape[1] - kk) // (stride or kk) + 1, (shape[2] - kk) // (stride or kk) + 1, shape[3])
            ts.append(_q(pattern, shape[1:], (inp("X", shape, "int8"), out("Y", oshape, "int8")),
                         partial(avgpool_i8_def, shape, kk, stride or kk),
                         partial(avgpool_i8_ref, k=kk, stride=stride or kk), numel(shape),
                         f"{src}: sum then round-half-away divide (TFLite AVERAGE_POOL_2D)"))
    for shape, src in (((1, 26, 26, 256), "YOLOv3-tiny int8 maxpool"), ((1, 32, 32, 32), "int8 maxpool 2x2 s2")):
        ts.append(_q("maxpool2d_2x2_s2_i8", shape[1:], (inp("X", shape, "int8"),
                                                        out("Y", (1, shape[1] // 2, shape[2] // 2, shape[3]), "int8")),
                     partial(maxpool_i8_def, shape, 2, 2), partial(maxpool_i8_ref, k=2, stride=2), 4 * numel(shape), src))
    for shape, src in (((1, 14, 14, 240), "MobileNetV3 int8 hard-swish via 256-entry LUT"),
                       ((1, 2034, 91), "SSD int8 logistic via 256-entry LUT")):
        ts.append(_q("lut_i8", shape[1:], (inp("X", shape, "int8"), inp("lut", (256,), "int8"), out("Y", shape, "int8")),
                     partial(lut_def, shape), lambda x, lut: lut[x.astype(np.int64) + 128], numel(shape),
                     f"{src} (TFLite int8 LOGISTIC/TANH/HARD_SWISH kernels)"))
    for shape, lo, hi, src in (((1, 56, 56, 24), -10, 60, "MobileNetV2 int8 ReLU6 clamp [zp, q(6)]"),
                               ((1, 14, 14, 384), -20, 90, "MobileNetV2 int8 ReLU6 clamp 14x14x384")):
        ts.append(_q("relu6_clamp_i8", shape[1:], (inp("X", shape, "int8"), out("Y", shape, "int8")),
                     partial(clamp_def, shape, lo, hi), lambda x, lo=lo, hi=hi: np.clip(x, lo, hi), 2 * numel(shape),
                     f"{src}, [{lo}, {hi}]"))
    for rows, k, src in ((256, 64, "MobileViT-XXS tokens (256 x 64), dynamic-range (hybrid) FC input"),
                         (196, 192, "MobileViT-XS tokens, dynamic per-token quantisation")):
        ts.append(_q("quantize_dynamic_rowwise_i8", (rows, k), (inp("X", (rows, k)), out("Q", (rows, k), "int8"),
                                                                out("scale", (rows,))),
                     partial(dynq_def, rows, k), dynq_ref, 4 * rows * k,
                     f"{src}: per-row symmetric scale max|x|/127 and int8 values"))
    return ts
