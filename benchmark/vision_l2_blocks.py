"""L2 fused vision blocks (fp32 and fp16): conv + BN/bias + activation epilogues, DS-CNN and VWW
depthwise-separable blocks, MobileNetV2 inverted residuals, MobileNetV3 bottleneck with SE,
EdgeTPU fused-IBN, SE / CBAM attention, ResNet-8 blocks, classifier and segmentation heads,
GhostNet / ShuffleNetV2 / SqueezeNet units, YOLOv5 C3 bottleneck and SPPF. Weights are inputs
drawn at trained-network scale (He init), BN folded to bias unless the pattern names BN."""
from __future__ import annotations

from functools import partial

from benchmark._lib import make_task, numel, out, shape_tag
from benchmark._lib.conv import ConvSpec, TConvSpec, same
from benchmark.vision_l2_ops import P, block_def, block_ref, draw
from leka.tasks.task import Task


def wP(name: str, s: ConvSpec, dtype: str) -> P:
    return P(name, s.w_shape, "w", s.kh * s.kw * s.cin // s.groups, dtype)


def bP(name: str, n: int, dtype: str) -> P:
    return P(name, (n,), "b", dtype=dtype)


def bnP(prefix: str, n: int, dtype: str) -> list[P]:
    return [P(f"{prefix}gamma", (n,), "g", dtype=dtype), P(f"{prefix}beta", (n,), "beta", dtype=dtype),
            P(f"{prefix}mean", (n,), "mean", dtype=dtype), P(f"{prefix}var", (n,), "var", dtype=dtype)]


def xP(shape, dtype: str, name: str = "X") -> P:
    return P(name, tuple(shape), "x", dtype=dtype)


def dw(h, w, c, k=3, stride=1) -> ConvSpec:
    return same(h, w, c, c, k, stride, groups=c)


def pw(h, w, cin, cout) -> ConvSpec:
    return same(h, w, cin, cout, 1)


# --- blocks (ops is TeOps or NpOps) ----------------------------------------------------------------
def conv_bn_act(ops, x, w, g, b, m, v, *, s, act):
    return ops.act(ops.bn(ops.conv(x, w, s), g, b, m, v), act)


def conv_bias_act(ops, x, w, b, *, s, act):
    return ops.act(ops.bias(ops.conv(x, w, s), b), act)


def tconv_bn_relu(ops, x, w, g, b, m, v, *, s):
    return ops.act(ops.bn(ops.tconv(x, w, s), g, b, m, v), "relu")


def dw_pw(ops, x, wd, bd, wp, bp, *, sd, sp, act="relu"):
    y = ops.act(ops.bias(ops.conv(x, wd, sd), bd), act)
    return ops.act(ops.bias(ops.conv(y, wp, sp), bp), act)


def inverted_residual(ops, x, we, be, wd, bd, wp, bp, *, se, sd, sp, residual, act="relu6"):
    y = ops.act(ops.bias(ops.conv(x, we, se), be), act)
    y = ops.act(ops.bias(ops.conv(y, wd, sd), bd), act)
    y = ops.bias(ops.conv(y, wp, sp), bp)
    return ops.add(x, y) if residual else y


def se_scale(ops, x, w1, b1, w2, b2, gate="hardsigmoid"):
    s = ops.act(ops.bias(ops.dense(ops.gap(x), w1), b1), "relu")
    return ops.mul_channel(x, ops.act(ops.bias(ops.dense(s, w2), b2), gate))


def mbv3_bneck(ops, x, we, be, wd, bd, w1, b1, w2, b2, wp, bp, *, se, sd, sp):
    y = ops.act(ops.bias(ops.conv(x, we, se), be), "hardswish")
    y = ops.act(ops.bias(ops.conv(y, wd, sd), bd), "hardswish")
    y = se_scale(ops, y, w1, b1, w2, b2)
    return ops.add(x, ops.bias(ops.conv(y, wp, sp), bp))


def fused_ibn(ops, x, we, be, wp, bp, *, se, sp, residual):
    y = ops.act(ops.bias(ops.conv(x, we, se), be), "relu")
    y = ops.bias(ops.conv(y, wp, sp), bp)
    return ops.add(x, y) if residual else y


def conv_bn_add_relu(ops, x, res, w, g, b, m, v, *, s):
    return ops.act(ops.add(ops.bn(ops.conv(x, w, s), g, b, m, v), res), "relu")


def resnet_proj_block(ops, x, w1, b1, w2, b2, ws, bs, *, s1, s2, ss):
    y = ops.act(ops.bias(ops.conv(x, w1, s1), b1), "relu")
    y = ops.bias(ops.conv(y, w2, s2), b2)
    return ops.act(ops.add(y, ops.bias(ops.conv(x, ws, ss), bs)), "relu")


def head_softmax(ops, x, w, b):
    return ops.softmax(ops.bias(ops.dense(ops.gap(x), w), b))


def upsample_argmax(ops, x, *, oh, ow):
    return ops.argmax(ops.resize_ac(x, oh, ow))


def ghost(ops, x, wp, bp, wc, bc, *, sp, sc):
    p = ops.act(ops.bias(ops.conv(x, wp, sp), bp), "relu")
    return ops.concat([p, ops.act(ops.bias(ops.conv(p, wc, sc), bc), "relu")])


def shufflev2_unit(ops, x, w1, b1, wd, bd, w2, b2, *, s1, sd, s2):
    half = s1.cin
    keep, y = ops.slice_c(x, 0, half), ops.slice_c(x, half, half)
    y = ops.act(ops.bias(ops.conv(y, w1, s1), b1), "relu")
    y = ops.bias(ops.conv(y, wd, sd), bd)
    y = ops.act(ops.bias(ops.conv(y, w2, s2), b2), "relu")
    return ops.shuffle(ops.concat([keep, y]), 2)


def fire(ops, x, ws, bs, w1, b1, w3, b3, *, ss, s1, s3):
    sq = ops.act(ops.bias(ops.conv(x, ws, ss), bs), "relu")
    return ops.concat([ops.act(ops.bias(ops.conv(sq, w1, s1), b1), "relu"),
                       ops.act(ops.bias(ops.conv(sq, w3, s3), b3), "relu")])


def c3_bottleneck(ops, x, w1, b1, w2, b2, *, s1, s2):
    y = ops.act(ops.bias(ops.conv(x, w1, s1), b1), "silu")
    return ops.add(x, ops.act(ops.bias(ops.conv(y, w2, s2), b2), "silu"))


def sppf(ops, x, w1, b1, w2, b2, *, s1, s2):
    y = ops.act(ops.bias(ops.conv(x, w1, s1), b1), "silu")
    p1 = ops.maxpool(y, 5, 1, (2, 2, 2, 2))
    p2 = ops.maxpool(p1, 5, 1, (2, 2, 2, 2))
    p3 = ops.maxpool(p2, 5, 1, (2, 2, 2, 2))
    return ops.act(ops.bias(ops.conv(ops.concat([y, p1, p2, p3]), w2, s2), b2), "silu")


def cbam_channel(ops, x, w1, b1, w2, b2):
    def mlp(v):
        return ops.bias(ops.dense(ops.act(ops.bias(ops.dense(v, w1), b1), "relu"), w2), b2)
    return ops.mul_channel(x, ops.act(ops.add(mlp(ops.gap(x)), mlp(ops.gap(x, "max"))), "sigmoid"))


# --- workload constructors ---------------------------------------------------------------------------
def _task(pattern, tag, params, block, oshape, flops, desc, dtype, out_dtype=None, layout="NHWC") -> Task:
    od = out_dtype or dtype
    return make_task(level=2, pattern=pattern, tag=shape_tag(tag), domain="vision", dtype=dtype, layout=layout,
                     args=[p.spec() for p in params] + [out("Y", oshape, od)],
                     build=partial(block_def, params, block, od), reference=partial(block_ref, block),
                     make_inputs=partial(draw, params), flops=flops, description=desc)


def t_conv_bn_act(pattern, s: ConvSpec, act, src, dt="float32"):
    ps = [xP(s.x_shape, dt), wP("W", s, dt)] + bnP("", s.cout, dt)
    return _task(pattern, (s.h, s.w, s.cin, s.cout), ps, partial(conv_bn_act, s=s, act=act), s.y_shape,
                 2 * s.macs + 6 * numel(s.y_shape), f"{src}: conv {s.kh}x{s.kw} s{s.stride} + BN + {act}", dt)


def t_conv_bias_act(pattern, s: ConvSpec, act, src, dt="float32"):
    ps = [xP(s.x_shape, dt), wP("W", s, dt), bP("B", s.cout, dt)]
    return _task(pattern, (s.h, s.w, s.cin, s.cout), ps, partial(conv_bias_act, s=s, act=act), s.y_shape,
                 2 * s.macs + 5 * numel(s.y_shape), f"{src}: conv {s.kh}x{s.kw} s{s.stride} + bias + {act}", dt)


def t_dw_pw(pattern, h, w, cin, cout, stride, src, dt="float32"):
    sd, sp = dw(h, w, cin, 3, stride), pw(-(-h // stride), -(-w // stride), cin, cout)
    ps = [xP(sd.x_shape, dt), wP("Wd", sd, dt), bP("Bd", cin, dt), wP("Wp", sp, dt), bP("Bp", cout, dt)]
    return _task(pattern, (h, w, cin, cout), ps, partial(dw_pw, sd=sd, sp=sp), sp.y_shape,
                 2 * (sd.macs + sp.macs), f"{src}: dw3x3 s{stride} + bias + ReLU + pw + bias + ReLU", dt)


def t_ir(pattern, h, w, cin, t, cout, stride, src, dt="float32"):
    e = cin * t
    se_, sd = pw(h, w, cin, e), dw(h, w, e, 3, stride)
    sp = pw(sd.oh, sd.ow, e, cout)
    res = stride == 1 and cin == cout
    ps = [xP(se_.x_shape, dt), wP("We", se_, dt), bP("Be", e, dt), wP("Wd", sd, dt), bP("Bd", e, dt), wP("Wp", sp, dt),
          bP("Bp", cout, dt)]
    return _task(pattern, (h, w, cin, e, cout), ps, partial(inverted_residual, se=se_, sd=sd, sp=sp, residual=res),
                 sp.y_shape, 2 * (se_.macs + sd.macs + sp.macs),
                 f"{src}: expand 1x1 + ReLU6, dw3x3 s{stride} + ReLU6, project 1x1{' + residual' if res else ''}", dt)


def t_mbv3(h, w, c, e, k, red, src):
    se_, sd, sp = pw(h, w, c, e), dw(h, w, e, k), pw(h, w, e, c)
    dt = "float32"
    ps = [xP(se_.x_shape, dt), wP("We", se_, dt), bP("Be", e, dt), wP("Wd", sd, dt), bP("Bd", e, dt),
          P("W1", (e, red), "w", e), bP("B1", red, dt), P("W2", (red, e), "w", red), bP("B2", e, dt),
          wP("Wp", sp, dt), bP("Bp", c, dt)]
    return _task("mbv3_bneck_se_hswish_nhwc", (h, w, c, e), ps, partial(mbv3_bneck, se=se_, sd=sd, sp=sp), sp.y_shape,
                 2 * (se_.macs + sd.macs + sp.macs + 2 * e * red), f"{src}: expand+hswish, dw{k}x{k}+hswish, SE "
                 f"(reduce {red}, hard-sigmoid), project, residual", dt)


def t_fused_ibn(pattern, h, w, cin, e, cout, stride, src):
    se_ = same(h, w, cin, e, 3, stride)
    sp = pw(se_.oh, se_.ow, e, cout)
    res = stride == 1 and cin == cout
    ps = [xP(se_.x_shape, "float32"), wP("We", se_, "float32"), bP("Be", e, "float32"), wP("Wp", sp, "float32"),
          bP("Bp", cout, "float32")]
    return _task(pattern, (h, w, cin, e, cout), ps, partial(fused_ibn, se=se_, sp=sp, residual=res), sp.y_shape,
                 2 * (se_.macs + sp.macs), f"{src}: regular 3x3 s{stride} expand + ReLU, 1x1 project"
                 f"{' + residual' if res else ''} (EdgeTPU fused-IBN)", "float32")


def t_se(pattern, h, w, c, red, src, dt="float32", gate="hardsigmoid"):
    ps = [xP((1, h, w, c), dt), P("W1", (c, red), "w", c, dt), bP("B1", red, dt), P("W2", (red, c), "w", red, dt),
          bP("B2", c, dt)]
    blk = partial(se_scale, gate=gate) if gate != "hardsigmoid" else se_scale
    return _task(pattern, (h, w, c, red), ps, blk, (1, h, w, c), 2 * h * w * c + 4 * c * red,
                 f"{src}: global avgpool, FC {c}->{red} + ReLU, FC -> {c} + {gate}, channel scale", dt)


def tasks() -> list[Task]:
    f16 = "float16"
    ts = [
        t_conv_bn_act("conv2d_3x3_bn_relu_nhwc", same(32, 32, 3, 16, 3), "relu", "ResNet-8 stem"),
        t_conv_bn_act("conv2d_3x3_bn_relu_nhwc", same(16, 16, 32, 32, 3), "relu", "ResNet-8 stack-2 conv"),
        t_conv_bn_act("conv2d_10x4_s2_bn_relu_nhwc", same(49, 10, 1, 64, (10, 4), 2), "relu", "DS-CNN-S stem"),
        t_conv_bn_act("conv2d_10x4_s2_bn_relu_nhwc", same(49, 10, 1, 172, (10, 4), 2), "relu", "DS-CNN-M stem"),
        t_conv_bn_act("dwconv2d_3x3_bn_relu_nhwc", dw(25, 5, 64), "relu", "DS-CNN depthwise"),
        t_conv_bn_act("dwconv2d_3x3_bn_relu_nhwc", dw(48, 48, 8), "relu", "VWW first depthwise"),
        t_conv_bn_act("conv2d_3x3_dil2_bn_relu_nhwc", same(33, 33, 32, 32, 3, dilation=2), "relu", "DeepLabv3 atrous"),
        t_conv_bn_act("conv2d_3x3_dil2_bn_relu_nhwc", same(17, 17, 64, 32, 3, dilation=2), "relu", "DeepLabv3 atrous OS32"),
        t_conv_bias_act("conv2d_3x3_s2_bias_relu6_nhwc", same(224, 224, 3, 16, 3, 2), "relu6", "MobileNetV2-0.5 stem"),
        t_conv_bias_act("conv2d_3x3_s2_bias_relu6_nhwc", same(96, 96, 3, 16, 3, 2), "relu6", "MobileNetV2 stem at 96"),
        t_conv_bias_act("conv2d_3x3_s2_bias_hardswish_nhwc", same(224, 224, 3, 16, 3, 2), "hardswish", "MobileNetV3 stem"),
        t_conv_bias_act("conv2d_3x3_s2_bias_hardswish_nhwc", same(128, 128, 3, 16, 3, 2), "hardswish",
                        "MobileNetV3 stem at 128"),
        t_conv_bias_act("conv2d_1x1_bias_sigmoid_nhwc", same(10, 10, 256, 255, 1), "sigmoid", "YOLOv5n P5 head at 320"),
        t_conv_bias_act("conv2d_1x1_bias_sigmoid_nhwc", same(20, 20, 128, 255, 1), "sigmoid", "YOLOv5n P4 head at 320"),
        t_dw_pw("dscnn_dw_pw_block_nhwc", 25, 5, 64, 64, 1, "DS-CNN-S block"),
        t_dw_pw("dscnn_dw_pw_block_nhwc", 25, 5, 276, 276, 1, "DS-CNN-L block"),
        t_dw_pw("vww_dw_pw_block_s2_nhwc", 48, 48, 16, 32, 2, "VWW MobileNetV1-0.25 block 2"),
        t_dw_pw("vww_dw_pw_block_s2_nhwc", 12, 12, 64, 128, 2, "VWW MobileNetV1-0.25 block 6"),
        t_ir("mbv2_inverted_residual_s1_nhwc", 28, 28, 32, 6, 32, 1, "MobileNetV2 block 28x28x32 (t=6)"),
        t_ir("mbv2_inverted_residual_s1_nhwc", 14, 14, 64, 6, 64, 1, "MobileNetV2 block 14x14x64 (t=6)"),
        t_ir("mbv2_inverted_residual_s2_nhwc", 56, 56, 16, 6, 16, 2, "MobileNetV2-0.5 block 56->28"),
        t_ir("mbv2_inverted_residual_s2_nhwc", 28, 28, 32, 6, 64, 2, "MobileNetV2 block 28->14 (32->64)"),
        t_mbv3(14, 14, 40, 240, 5, 64, "MobileNetV3-Small bneck 14x14x40 (exp 240, k5)"),
        t_mbv3(7, 7, 96, 576, 5, 144, "MobileNetV3-Small bneck 7x7x96 (exp 576, k5)"),
        t_fused_ibn("fused_ibn_s2_nhwc", 28, 28, 16, 128, 32, 2, "MobileNetEdgeTPU (ef8, s2, 32) at 28x28"),
        t_fused_ibn("fused_ibn_s2_nhwc", 14, 14, 32, 256, 48, 2, "MobileNetEdgeTPU (ef8, s2, 48) at 14x14"),
        t_fused_ibn("fused_ibn_s1_residual_nhwc", 12, 12, 32, 128, 32, 1, "MobileNetEdgeTPU (ef4, 32) at 12x12"),
        t_fused_ibn("fused_ibn_s1_residual_nhwc", 7, 7, 48, 192, 48, 1, "MobileNetEdgeTPU (ef4, 48) at 7x7"),
        t_se("se_block_hardsigmoid_nhwc", 14, 14, 96, 24, "MobileNetV3 SE 14x14x96"),
        t_se("se_block_hardsigmoid_nhwc", 28, 28, 72, 24, "MobileNetV3 SE 28x28x72"),
        t_se("se_block_sigmoid_nhwc", 56, 56, 16, 4, "EfficientNet-B0 SE (sigmoid) 56x56x16", gate="sigmoid"),
        t_se("se_block_sigmoid_nhwc", 14, 14, 112, 28, "EfficientNet-B0 SE (sigmoid) 14x14x112", gate="sigmoid"),
        # fp16 variants (inputs/weights/output fp16, fp32 arithmetic inside)
        t_conv_bn_act("conv2d_3x3_bn_relu_nhwc_f16", same(32, 32, 16, 16, 3), "relu", "ResNet-8 conv fp16", f16),
        t_conv_bn_act("conv2d_3x3_bn_relu_nhwc_f16", same(16, 16, 32, 32, 3), "relu", "ResNet-8 stack-2 conv fp16", f16),
        t_dw_pw("dscnn_dw_pw_block_nhwc_f16", 25, 5, 64, 64, 1, "DS-CNN-S block fp16", f16),
        t_dw_pw("dscnn_dw_pw_block_nhwc_f16", 25, 5, 172, 172, 1, "DS-CNN-M block fp16", f16),
        t_ir("mbv2_inverted_residual_s1_nhwc_f16", 28, 28, 32, 6, 32, 1, "MobileNetV2 block fp16", f16),
        t_ir("mbv2_inverted_residual_s1_nhwc_f16", 7, 7, 80, 6, 80, 1, "MobileNetV2-0.5 7x7x80 block fp16", f16),
        t_se("se_block_hardsigmoid_nhwc_f16", 14, 14, 96, 24, "MobileNetV3 SE fp16", f16),
        t_se("se_block_hardsigmoid_nhwc_f16", 7, 7, 576, 144, "MobileNetV3 SE 7x7x576 fp16", f16),
    ]
    return ts + _more_tasks()


def _more_tasks() -> list[Task]:
    dt = "float32"
    ts: list[Task] = []
    for h, c, src in ((32, 16, "ResNet-8 stack-1 second conv + BN + residual + ReLU"),
                      (8, 64, "ResNet-8 stack-3 second conv + BN + residual + ReLU")):
        s = same(h, h, c, c, 3)
        ps = [xP(s.x_shape, dt), xP(s.y_shape, dt, "R"), wP("W", s, dt)] + bnP("", c, dt)
        ts.append(_task("conv2d_3x3_bn_add_relu_nhwc", (h, h, c), ps, partial(conv_bn_add_relu, s=s), s.y_shape,
                        2 * s.macs + 7 * numel(s.y_shape), src, dt))
    for h, cin, cout, src in ((32, 16, 32, "ResNet-8 stack 2"), (16, 32, 64, "ResNet-8 stack 3")):
        s1, s2 = same(h, h, cin, cout, 3, 2), same(h // 2, h // 2, cout, cout, 3)
        ss = ConvSpec(h, h, cin, cout, 1, 1, 2)
        ps = [xP(s1.x_shape, dt), wP("W1", s1, dt), bP("B1", cout, dt), wP("W2", s2, dt), bP("B2", cout, dt),
              wP("Ws", ss, dt), bP("Bs", cout, dt)]
        ts.append(_task("resnet_basic_block_proj_nhwc", (h, h, cin, cout), ps,
                        partial(resnet_proj_block, s1=s1, s2=s2, ss=ss), s2.y_shape,
                        2 * (s1.macs + s2.macs + ss.macs), f"{src}: conv3x3 s2 + ReLU, conv3x3, 1x1 s2 projection, "
                        "add, ReLU (BN folded)", dt))
    for (h, w, c), n, src in (((25, 5, 64), 12, "DS-CNN head: avgpool 25x5 + FC 64->12 + softmax"),
                              ((8, 8, 64), 10, "ResNet-8 head: avgpool 8x8 + FC 64->10 + softmax")):
        # FC weights at unit scale: a He-scaled FC after a global mean gives near-uniform softmax outputs
        ps = [xP((1, h, w, c), dt), P("W", (c, n), "wraw"), P("B", (n,), "b")]
        ts.append(_task("avgpool_fc_softmax_head", (h, w, c, n), ps, head_softmax, (1, n), h * w * c + 2 * c * n + 4 * n,
                        src, dt))
    for (h, c), o, src in (((33, 21), 129, "DeepLabv3 VOC logits 33x33x21 -> 129x129 label map"),
                           ((17, 19), 65, "Cityscapes logits 17x17x19 -> 65x65 label map")):
        # align_corners with (o-1)/(h-1) = 4 keeps sampling weights exact in fp32, so label ties cannot flip
        ps = [xP((1, h, h, c), dt)]
        ts.append(_task("upsample_bilinear_argmax_nhwc", (h, h, c, o), ps, partial(upsample_argmax, oh=o, ow=o),
                        (1, o, o), 10 * o * o * c, f"{src} (bilinear align_corners + argmax)", dt, out_dtype="int32"))
    for h, cin, cout, src in ((28, 24, 48, "GhostNet ghost module 28x28, 24->48"),
                              (14, 40, 80, "GhostNet ghost module 14x14, 40->80")):
        sp, sc = pw(h, h, cin, cout // 2), dw(h, h, cout // 2)
        ps = [xP(sp.x_shape, dt), wP("Wp", sp, dt), bP("Bp", cout // 2, dt), wP("Wc", sc, dt), bP("Bc", cout // 2, dt)]
        ts.append(_task("ghost_module_nhwc", (h, h, cin, cout), ps, partial(ghost, sp=sp, sc=sc), (1, h, h, cout),
                        2 * (sp.macs + sc.macs), f"{src}: primary 1x1 + ReLU, cheap dw3x3 + ReLU, concat", dt))
    for h, c, src in ((28, 116, "ShuffleNetV2 1.0x stage-2 unit"), (14, 232, "ShuffleNetV2 1.0x stage-3 unit")):
        half = c // 2
        s1, sd, s2 = pw(h, h, half, half), dw(h, h, half), pw(h, h, half, half)
        ps = [xP((1, h, h, c), dt), wP("W1", s1, dt), bP("B1", half, dt), wP("Wd", sd, dt), bP("Bd", half, dt),
              wP("W2", s2, dt), bP("B2", half, dt)]
        ts.append(_task("shufflenetv2_unit_s1_nhwc", (h, h, c), ps, partial(shufflev2_unit, s1=s1, sd=sd, s2=s2),
                        (1, h, h, c), 2 * (s1.macs + sd.macs + s2.macs), f"{src}: split, pw+ReLU, dw3x3, pw+ReLU, concat, "
                        "shuffle g2", dt))
    for h, cin, sq, e, src in ((28, 64, 16, 64, "SqueezeNet fire2 at 28x28"), (7, 256, 48, 192, "SqueezeNet fire6 at 7x7")):
        ss, s1, s3 = pw(h, h, cin, sq), pw(h, h, sq, e), same(h, h, sq, e, 3)
        ps = [xP(ss.x_shape, dt), wP("Ws", ss, dt), bP("Bs", sq, dt), wP("W1", s1, dt), bP("B1", e, dt), wP("W3", s3, dt),
              bP("B3", e, dt)]
        ts.append(_task("fire_module_nhwc", (h, h, cin, sq, e), ps, partial(fire, ss=ss, s1=s1, s3=s3), (1, h, h, 2 * e),
                        2 * (ss.macs + s1.macs + s3.macs), f"{src}: squeeze 1x1, expand 1x1 || 3x3, ReLU, concat", dt))
    for h, c, src in ((14, 64, "YOLOv5n C3 bottleneck, P4 at 224 input"), (28, 32, "YOLOv5n C3 bottleneck, P3 at 224 input")):
        s1, s2 = pw(h, h, c, c), same(h, h, c, c, 3)
        ps = [xP(s1.x_shape, dt), wP("W1", s1, dt), bP("B1", c, dt), wP("W2", s2, dt), bP("B2", c, dt)]
        ts.append(_task("c3_bottleneck_silu_nhwc", (h, h, c), ps, partial(c3_bottleneck, s1=s1, s2=s2), s1.y_shape,
                        2 * (s1.macs + s2.macs), f"{src}: 1x1 + SiLU, 3x3 + SiLU, residual add", dt))
    for h, c, src in ((8, 256, "YOLOv5n SPPF at 256 input (8x8x256)"), (16, 128, "YOLOv5n-0.5x-width SPPF at 512 input")):
        s1, s2 = pw(h, h, c, c // 2), pw(h, h, 2 * c, c)
        ps = [xP(s1.x_shape, dt), wP("W1", s1, dt), bP("B1", c // 2, dt), wP("W2", s2, dt), bP("B2", c, dt)]
        ts.append(_task("sppf_nhwc", (h, h, c), ps, partial(sppf, s1=s1, s2=s2), s2.y_shape,
                        2 * (s1.macs + s2.macs) + 3 * 25 * h * h * c // 2,
                        f"{src}: 1x1 + SiLU, 3 chained maxpool 5x5 s1, concat, 1x1 + SiLU", dt))
    for h, c, red, src in ((14, 96, 6, "CBAM channel attention 14x14x96 (r=16)"),
                           (28, 64, 4, "CBAM channel attention 28x28x64 (r=16)")):
        ps = [xP((1, h, h, c), dt), P("W1", (c, red), "w", c), bP("B1", red, dt), P("W2", (red, c), "w", red),
              bP("B2", c, dt)]
        ts.append(_task("cbam_channel_attention_nhwc", (h, h, c), ps, cbam_channel, (1, h, h, c),
                        3 * h * h * c + 8 * c * red, f"{src}: avg+max pool, shared MLP, sigmoid, scale", dt))
    for s, src in ((TConvSpec(12, 12, 32, 16, 4, 2, 1), "segmentation decoder 4x4 s2 + BN + ReLU"),
                   (TConvSpec(16, 16, 64, 32, 3, 2, 1, 1), "ENet-lite decoder 3x3 s2 + BN + ReLU")):
        ps = [xP(s.x_shape, dt), P("W", s.w_shape, "w", s.k * s.k * s.cin // (s.stride * s.stride))] + bnP("", s.cout, dt)
        ts.append(_task("conv2d_transpose_bn_relu_nhwc", (s.h, s.w, s.cin, s.cout), ps, partial(tconv_bn_relu, s=s),
                        s.y_shape, 2 * s.macs + 6 * numel(s.y_shape), src, dt))
    return ts
