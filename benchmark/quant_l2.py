"""L2 fused int8 chains (TFLite int8 semantics): conv / depthwise / FC with per-channel requantise
and activation clamp, DS-CNN and VWW int8 blocks, MobileNetV2 int8 inverted residual with a
rescaled residual add, ResNet-8 int8 basic block, int8 classifier head, quantize -> conv ->
dequantize model boundary, and pointwise + LUT hard-swish. Outputs are exact integers."""
from __future__ import annotations

from functools import partial

from benchmark._lib import make_task, numel, out, shape_tag
from benchmark._lib.conv import ConvSpec, same
from benchmark._lib.quant import MCU_SRAM_BYTES, M_HIGH, M_LOW, bias_input, quantize_multiplier, shift_for
from benchmark.vision_l2_ops import P, block_def, block_ref, draw
from leka.tasks.task import Task

ZX = -3          # zero point of the block input
ZA = 5           # zero point of every requantised intermediate / output
RELU6_MAX = 90   # q(6.0) for the relu6 clamps below (scale 6/85)
CLAMPED_STD = 30.0  # std of a ReLU-clamped int8 activation centred near ZA, for choosing shifts


def xq(shape, name="X") -> P:
    return P(name, tuple(shape), "x", dtype="int8")


def wq(name, s: ConvSpec) -> P:
    return P(name, s.w_shape, "x", dtype="int8", low=-127, high=128)


def bq(name, n, fan) -> P:
    spec = bias_input(name, n, fan)
    return P(name, (n,), "x", dtype="int32", low=int(spec.low), high=int(spec.high))


def mq(name, n) -> P:
    return P(name, (n,), "x", dtype="int32", low=M_LOW, high=M_HIGH)


def fan(s: ConvSpec) -> int:
    return s.kh * s.kw * s.cin // s.groups


def _sh(s: ConvSpec, first: bool) -> int:
    return shift_for(fan(s)) if first else shift_for(fan(s), x_std=CLAMPED_STD)


ADD_M = (quantize_multiplier(0.5), quantize_multiplier(0.4), quantize_multiplier(0.16 / ((1 << 20) * 0.1)))


# --- blocks -------------------------------------------------------------------------------------------
def conv_rq(ops, x, w, b, m, *, s, zx, shift, qmin, qmax):
    return ops.requant(ops.conv_i8(x, w, s, zx), b, m, shift, ZA, qmin, qmax)


def conv_chain(ops, x, *params, specs, clamps):
    """Sequential conv+requant layers; params are (w, b, m) per layer."""
    y, zx = x, ZX
    for i, s in enumerate(specs):
        w, b, m = params[3 * i:3 * i + 3]
        y = ops.requant(ops.conv_i8(y, w, s, zx), b, m, _sh(s, i == 0), ZA, *clamps[i])
        zx = ZA
    return y


def ir_i8(ops, x, *params, specs):
    y = conv_chain(ops, x, *params, specs=specs, clamps=[(ZA, RELU6_MAX), (ZA, RELU6_MAX), (-128, 127)])
    return ops.add_i8(x, y, ZX, ZA, *ADD_M, ZA)


def resnet_i8(ops, x, *params, specs):
    y = conv_chain(ops, x, *params, specs=specs, clamps=[(ZA, 127), (-128, 127)])
    return ops.add_i8(x, y, ZX, ZA, *ADD_M, ZA, qmin=ZA)


def add_relu_i8(ops, a, b):
    return ops.add_i8(a, b, ZX, ZX, *ADD_M, ZA, qmin=ZA)


def head_i8(ops, x, w, b, m, *, k):
    pooled = ops.gap_i8(x)
    return ops.requant(ops.dense_i8(pooled, w, ZX), b, m, shift_for(k), ZA)


def fc_rq(ops, x, w, b, m, *, k):
    return ops.requant(ops.dense_i8(x, w, ZX), b, m, shift_for(k), ZA)


def q_conv_dq(ops, x, w, b, scale, *, s, inv):
    return ops.dequant_acc(ops.conv_i8(ops.quantize(x, inv, ZX), w, s, ZX), b, scale)


def pw_lut(ops, x, w, b, m, table, *, s):
    return ops.lut(ops.requant(ops.conv_i8(x, w, s, ZX), b, m, shift_for(fan(s)), ZA), table)


# --- workloads ----------------------------------------------------------------------------------------
def _task(pattern, tag, params, block, oshape, flops, desc, out_dtype="int8", mcu=False) -> Task:
    return make_task(level=2, pattern=pattern, tag=shape_tag(tag), domain="vision", dtype="int8", layout="NHWC",
                     memory_budget_bytes=MCU_SRAM_BYTES if mcu else None,
                     args=[p.spec() for p in params] + [out("Y", oshape, out_dtype)],
                     build=partial(block_def, params, block, out_dtype), reference=partial(block_ref, block),
                     make_inputs=partial(draw, params), flops=flops, description=desc, tags=("int8", "quantized"))


def _layer_params(specs) -> list[P]:
    ps: list[P] = []
    for i, s in enumerate(specs):
        ps += [wq(f"W{i}", s), bq(f"B{i}", s.cout, fan(s)), mq(f"M{i}", s.cout)]
    return ps


def _chain_task(pattern, tag, specs, clamps, src, block=None, mcu=False):
    ps = [xq(specs[0].x_shape)] + _layer_params(specs)
    blk = block or partial(conv_chain, specs=specs, clamps=clamps)
    return _task(pattern, tag, ps, blk, specs[-1].y_shape, sum(2 * s.macs + 4 * numel(s.y_shape) for s in specs),
                 f"{src} (int32 accumulate, per-channel fixed-point requantise, zp {ZA})", mcu=mcu)


def tasks() -> list[Task]:
    relu, relu6, lin = (ZA, 127), (ZA, RELU6_MAX), (-128, 127)
    ts: list[Task] = []
    for s, src in ((same(32, 32, 16, 16, 3), "ResNet-8 int8 conv + ReLU"), (same(16, 16, 32, 32, 3), "ResNet-8 stack-2")):
        ts.append(_chain_task("conv2d_3x3_i8_requant_relu_nhwc", (s.h, s.w, s.cin, s.cout), [s], [relu], src, mcu=True))
    for s, src in ((same(28, 28, 192, 32, 1), "MobileNetV2 int8 linear projection 192->32"),
                   (same(7, 7, 576, 96, 1), "MobileNetV2 int8 linear projection 576->96")):
        ts.append(_chain_task("conv2d_1x1_i8_requant_nhwc", (s.h, s.w, s.cin, s.cout), [s], [lin], src))
    for s, src in ((same(28, 28, 144, 144, 3, groups=144), "MobileNetV2 int8 depthwise + ReLU6"),
                   (same(14, 14, 384, 384, 3, groups=384), "MobileNetV2 int8 depthwise 14x14x384 + ReLU6")):
        ts.append(_chain_task("dwconv2d_3x3_i8_requant_relu6_nhwc", (s.h, s.w, s.cin), [s], [relu6], src))
    for c, src in ((64, "DS-CNN-S int8 block"), (172, "DS-CNN-M int8 block")):
        specs = [same(25, 5, c, c, 3, groups=c), same(25, 5, c, c, 1)]
        ts.append(_chain_task("dscnn_block_i8_nhwc", (25, 5, c), specs, [relu, relu], f"{src}: dw3x3+ReLU, pw+ReLU",
                              mcu=c == 64))
    for h, cin, cout, src in ((48, 16, 32, "VWW int8 block 2"), (12, 64, 128, "VWW int8 block 6")):
        specs = [same(h, h, cin, cin, 3, 2, groups=cin), same(h // 2, h // 2, cin, cout, 1)]
        ts.append(_chain_task("vww_dw_pw_block_s2_i8_nhwc", (h, h, cin, cout), specs, [relu, relu],
                              f"{src}: dw3x3 s2 + ReLU, pw + ReLU", mcu=h == 12))
    for h, c, t, src in ((14, 32, 6, "MobileNetV2 int8 inverted residual 14x14x32"),
                         (28, 16, 6, "MobileNetV2-0.5 int8 inverted residual 28x28x16")):
        e = c * t
        specs = [same(h, h, c, e, 1), same(h, h, e, e, 3, groups=e), same(h, h, e, c, 1)]
        ts.append(_chain_task("mbv2_inverted_residual_i8_nhwc", (h, h, c, e), specs, [], f"{src}: expand+ReLU6, "
                              "dw+ReLU6, project, TFLite int8 residual ADD", block=partial(ir_i8, specs=specs)))
    for h, c, src in ((32, 16, "ResNet-8 int8 stack-1 block"), (8, 64, "ResNet-8 int8 stack-3 block (identity)")):
        specs = [same(h, h, c, c, 3), same(h, h, c, c, 3)]
        ts.append(_chain_task("resnet_basic_block_i8_nhwc", (h, h, c), specs, [], f"{src}: conv+ReLU, conv, int8 ADD "
                              "+ ReLU", block=partial(resnet_i8, specs=specs), mcu=h == 8))
    for shape, src in (((1, 32, 32, 16), "ResNet-8 int8 residual add + ReLU"), ((1, 8, 8, 64), "ResNet-8 int8 add + ReLU")):
        ps = [xq(shape, "A"), xq(shape, "B2")]
        ts.append(_task("add_i8_rescale_relu", shape[1:], ps, add_relu_i8, shape, 12 * numel(shape),
                        f"{src}: TFLite int8 ADD with fused ReLU clamp", mcu=True))
    for (h, c), n, src in (((8, 64), 10, "ResNet-8 int8 head: avgpool + FC 64->10"),
                           ((7, 256), 2, "VWW MobileNetV1-0.25@224 int8 head: avgpool + FC 256->2")):
        ps = [xq((1, h, h, c)), P("W", (c, n), "x", dtype="int8", low=-127, high=128), bq("B", n, c), mq("M", n)]
        ts.append(_task("avgpool_fc_i8_head", (h, h, c, n), ps, partial(head_i8, k=c), (1, n), h * h * c + 2 * c * n,
                        f"{src}, requantised int8 logits", mcu=True))
    for k, n, src in ((64, 12, "DS-CNN int8 FC 64->12"), (1024, 1000, "MobileNetV1 int8 FC 1024->1000")):
        ps = [xq((1, k)), P("W", (k, n), "x", dtype="int8", low=-127, high=128), bq("B", n, k), mq("M", n)]
        ts.append(_task("fc_i8_requant", (k, n), ps, partial(fc_rq, k=k), (1, n), 2 * k * n + 4 * n,
                        f"{src} + per-channel requantise", mcu=k == 64))
    for s, inv, src in ((same(96, 96, 3, 8, 3, 2), 40.0, "VWW stem as a quantised island"),
                        (same(32, 32, 3, 16, 3), 30.0, "ResNet-8 stem as a quantised island")):
        ps = [P("X", s.x_shape, "x"), wq("W", s), bq("B", s.cout, fan(s)), P("scale", (s.cout,), "g")]
        ts.append(_task("quantize_conv_dequantize_nhwc", (s.h, s.w, s.cin, s.cout), ps,
                        partial(q_conv_dq, s=s, inv=inv), s.y_shape, 2 * s.macs + 6 * numel(s.y_shape),
                        f"{src}: fp32 -> int8 (x{inv:g}, zp {ZX}) -> conv int32 -> (acc + bias) * per-channel scale",
                        out_dtype="float32"))
    for s, src in ((same(14, 14, 40, 240, 1), "MobileNetV3-Small int8 expand + hard-swish LUT"),
                   (same(7, 7, 96, 576, 1), "MobileNetV3-Small int8 expand 96->576 + hard-swish LUT")):
        ps = [xq(s.x_shape), wq("W", s), bq("B", s.cout, fan(s)), mq("M", s.cout), P("lut", (256,), "x", dtype="int8")]
        ts.append(_task("conv2d_1x1_i8_requant_lut_nhwc", (s.h, s.w, s.cin, s.cout), ps, partial(pw_lut, s=s), s.y_shape,
                        2 * s.macs + 5 * numel(s.y_shape), src))
    return ts
