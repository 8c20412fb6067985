"""L1 vision convolutions: regular k1/k3/k5/k7/k10x4 x stride x layout, dilated, grouped, depthwise,
transposed, fp16 variants, and the classifier dense layer. Shapes come from MLPerf Tiny (DS-CNN,
VWW MobileNetV1-0.25, ResNet-8), MobileNetV2/V3/EdgeTPU, DeepLabv3, PilotNet and friends, scaled to
edge-small batch-1 sizes where the original layer would exceed the naive-runtime budget.
"""
from __future__ import annotations

from functools import partial

from benchmark._lib import inp, make_task, out, shape_tag
from benchmark._lib.conv import ConvSpec, TConvSpec, conv2d_ref, conv2d_te, same, tconv2d_ref, tconv2d_te
from leka.tasks.task import Task


def _valid(h, w, cin, cout, k, stride, layout="NHWC") -> ConvSpec:
    return ConvSpec(h, w, cin, cout, k, k, stride, (0, 0, 0, 0), 1, 1, layout)


# pattern -> [(spec, source)]
CONVS: dict[str, list[tuple[ConvSpec, str]]] = {
    "conv2d_1x1_s1_nhwc": [(same(48, 48, 8, 16, 1), "VWW MobileNetV1-0.25 first pointwise (skinny, K=8)"),
                           (same(25, 5, 64, 64, 1), "DS-CNN KWS pointwise 64->64 on 25x5")],
    "conv2d_1x1_s1_nchw": [(same(6, 6, 128, 128, 1, layout="NCHW"), "VWW MobileNetV1-0.25 deep-narrow pointwise 6x6"),
                           (same(3, 3, 256, 256, 1, layout="NCHW"), "VWW MobileNetV1-0.25 last pointwise 3x3")],
    "conv2d_1x1_s2_nhwc": [(_valid(32, 32, 16, 32, 1, 2), "ResNet-8 stack-2 1x1 s2 projection shortcut"),
                           (_valid(16, 16, 32, 64, 1, 2), "ResNet-8 stack-3 1x1 s2 projection shortcut")],
    "conv2d_1x1_s2_nchw": [(_valid(56, 56, 64, 128, 1, 2, "NCHW"), "ResNet-18 layer2 downsample shortcut"),
                           (_valid(28, 28, 128, 256, 1, 2, "NCHW"), "ResNet-18 layer3 downsample shortcut")],
    "conv2d_3x3_s1_nhwc": [(same(32, 32, 16, 16, 3), "ResNet-8 stack-1 conv 3x3"),
                           (same(16, 16, 32, 32, 3), "ResNet-8 stack-2 second conv 3x3")],
    "conv2d_3x3_s1_nchw": [(same(32, 32, 16, 16, 3, layout="NCHW"), "ResNet-8 stack-1 conv 3x3, NCHW"),
                           (same(8, 8, 64, 64, 3, layout="NCHW"), "ResNet-8 stack-3 second conv 3x3, NCHW")],
    "conv2d_3x3_s2_nhwc": [(same(96, 96, 3, 8, 3, 2), "VWW MobileNetV1-0.25 stem 96x96x3 -> 48x48x8"),
                           (same(32, 32, 16, 32, 3, 2), "ResNet-8 stack-2 first conv 3x3 s2")],
    "conv2d_3x3_s2_nchw": [(same(224, 224, 3, 16, 3, 2, layout="NCHW"), "MobileNetV3 stem 224x224x3 -> 112x112x16"),
                           (same(16, 16, 32, 64, 3, 2, layout="NCHW"), "ResNet-8 stack-3 first conv 3x3 s2")],
    "conv2d_5x5_s1_nhwc": [(same(32, 32, 1, 56, 5), "FSRCNN feature extraction 5x5 on a 32x32 LR patch"),
                           (same(16, 16, 32, 32, 5), "MnasNet-style regular 5x5 conv at 16x16x32")],
    "conv2d_5x5_s1_nchw": [(_valid(32, 32, 1, 6, 5, 1, "NCHW"), "LeNet-5 conv1 (valid)"),
                           (_valid(14, 14, 6, 16, 5, 1, "NCHW"), "LeNet-5 conv2 (valid)")],
    "conv2d_5x5_s2_nhwc": [(_valid(66, 200, 3, 24, 5, 2), "PilotNet conv1 66x200x3 (valid, s2)"),
                           (_valid(14, 47, 36, 48, 5, 2), "PilotNet conv3 14x47x36 (valid, s2)")],
    "conv2d_7x7_s2_nhwc": [(same(112, 112, 3, 16, 7, 2), "ResNet-style 7x7 s2 stem at half resolution"),
                           (same(64, 64, 3, 32, 7, 2), "7x7 s2 stem on a 64x64 crop (face/person detector)")],
    "conv2d_7x7_s2_nchw": [(same(96, 96, 3, 24, 7, 2, layout="NCHW"), "7x7 s2 stem at 96x96 (VWW resolution)"),
                           (same(128, 128, 1, 8, 7, 2, layout="NCHW"), "7x7 s2 stem on 128x128 grayscale")],
    "conv2d_10x4_s2_nhwc": [(same(49, 10, 1, 64, (10, 4), 2), "DS-CNN-S KWS stem, MFCC 49x10, pads H 4/5 W 1/1"),
                            (same(49, 10, 1, 276, (10, 4), 2), "DS-CNN-L KWS stem (276 filters)")],
    "conv2d_3x3_dil2_nhwc": [(same(33, 33, 16, 16, 3, dilation=2), "DeepLabv3 atrous conv rate 2 (scaled)"),
                             (same(17, 17, 32, 32, 3, dilation=2), "DeepLabv3 atrous conv rate 2 at output stride 32")],
    "conv2d_3x3_dil6_nchw": [(same(33, 33, 32, 32, 3, dilation=6, layout="NCHW"), "DeepLabv3 ASPP branch rate 6"),
                             (same(17, 17, 64, 32, 3, dilation=6, layout="NCHW"), "DeepLabv3 ASPP rate 6 at 17x17")],
    "conv2d_3x3_grouped_gw8_nhwc": [(same(28, 28, 56, 56, 3, groups=7), "RegNetX-200MF stage-2 group conv (gw 8)"),
                                    (same(14, 14, 152, 152, 3, groups=19), "RegNetX-200MF stage-3 group conv (gw 8)")],
    "conv2d_1x1_g3_nhwc": [(same(28, 28, 240, 60, 1, groups=3), "ShuffleNetV1 g3 stage-2 grouped pointwise 240->60"),
                           (same(14, 14, 480, 120, 1, groups=3), "ShuffleNetV1 g3 stage-3 grouped pointwise 480->120")],
    "dwconv2d_3x3_s1_nhwc": [(same(48, 48, 8, 8, 3, groups=8), "VWW MobileNetV1-0.25 first depthwise 48x48x8"),
                             (same(25, 5, 276, 276, 3, groups=276), "DS-CNN-L depthwise 25x5x276")],
    "dwconv2d_3x3_s2_nhwc": [(same(48, 48, 16, 16, 3, 2, groups=16), "VWW depthwise s2 48x48x16 (pad 0/1)"),
                             (same(12, 12, 64, 64, 3, 2, groups=64), "VWW depthwise s2 12x12x64 (pad 0/1)")],
    "dwconv2d_3x3_s1_nchw": [(same(56, 56, 144, 144, 3, groups=144, layout="NCHW"), "MobileNetV2 block-3 depthwise"),
                             (same(14, 14, 384, 384, 3, groups=384, layout="NCHW"), "MobileNetV2 14x14x384 depthwise")],
    "dwconv2d_3x3_s2_nchw": [(same(112, 112, 96, 96, 3, 2, groups=96, layout="NCHW"), "MobileNetV2 block-2 dw s2"),
                             (same(28, 28, 192, 192, 3, 2, groups=192, layout="NCHW"), "MobileNetV2 28->14 dw s2")],
    "dwconv2d_5x5_s1_nhwc": [(same(14, 14, 240, 240, 5, groups=240), "MobileNetV3-Small 5x5 depthwise 14x14x240"),
                             (same(7, 7, 576, 576, 5, groups=576), "MobileNetV3-Small last 5x5 depthwise 7x7x576")],
    "dwconv2d_5x5_s2_nhwc": [(same(14, 14, 768, 768, 5, 2, groups=768), "MobileNetEdgeTPU IBN k5 s2 (ef8, 96->768)"),
                             (same(28, 28, 72, 72, 5, 2, groups=72), "MobileNetV3-Large 5x5 s2 depthwise 28x28x72")],
    "dwconv2d_3x3_m2_nhwc": [(same(24, 24, 16, 32, 3, groups=16), "SeparableConv2D depth_multiplier=2 at 24x24x16"),
                             (same(12, 12, 32, 64, 3, groups=32), "SeparableConv2D depth_multiplier=2 at 12x12x32")],
    "dwconv2d_7x7_s1_nhwc": [(same(28, 28, 48, 48, 7, groups=48), "EdgeNeXt-XXS 7x7 depthwise stage 2"),
                             (same(14, 14, 88, 88, 7, groups=88), "EdgeNeXt-XXS 7x7 depthwise stage 3")],
}

CONVS_F16: dict[str, list[tuple[ConvSpec, str]]] = {
    "conv2d_3x3_s1_nhwc_f16": [(same(32, 32, 16, 16, 3), "ResNet-8 conv 3x3 in fp16 (GPU/NPU fp16 path)"),
                               (same(12, 12, 64, 64, 3), "fp16 3x3 conv 12x12x64 (YOLO-tiny neck class)")],
    "conv2d_3x3_s2_nhwc_f16": [(same(96, 96, 3, 8, 3, 2), "VWW stem in fp16"),
                               (same(224, 224, 3, 16, 3, 2), "MobileNetV3 stem 224 in fp16")],
    "conv2d_1x1_s1_nhwc_f16": [(same(28, 28, 32, 192, 1), "MobileNetV2 expand 1x1 28x28 32->192 fp16"),
                               (same(7, 7, 160, 960, 1), "MobileNetV2 expand 1x1 7x7 160->960 fp16")],
    "dwconv2d_3x3_s1_nhwc_f16": [(same(28, 28, 192, 192, 3, groups=192), "MobileNetV2 depthwise 28x28x192 fp16"),
                                 (same(14, 14, 384, 384, 3, groups=384), "MobileNetV2 depthwise 14x14x384 fp16")],
    "dwconv2d_3x3_s2_nhwc_f16": [(same(56, 56, 144, 144, 3, 2, groups=144), "MobileNetV2 dw s2 56->28 fp16"),
                                 (same(24, 24, 32, 32, 3, 2, groups=32), "VWW dw s2 24x24x32 fp16")],
    "dwconv2d_5x5_s1_nhwc_f16": [(same(14, 14, 480, 480, 5, groups=480), "MobileNetV3-Large 5x5 dw 14x14x480 fp16"),
                                 (same(7, 7, 960, 960, 5, groups=960), "MobileNetV3-Large 5x5 dw 7x7x960 fp16")],
}

TCONVS: dict[str, list[tuple[TConvSpec, str]]] = {
    "conv2d_transpose_4x4_s2_nhwc": [(TConvSpec(12, 12, 32, 16, 4, 2, 1), "pix2pix/DCGAN-style decoder 4x4 s2"),
                                     (TConvSpec(16, 16, 48, 24, 4, 2, 1), "segmentation decoder 4x4 s2 upsample")],
    "conv2d_transpose_2x2_s2_nchw": [(TConvSpec(16, 16, 64, 32, 2, 2, 0, 0, "NCHW"), "UNet-lite up-conv 2x2 s2"),
                                     (TConvSpec(32, 32, 32, 16, 2, 2, 0, 0, "NCHW"), "UNet-lite last up-conv 2x2 s2")],
    "conv2d_transpose_3x3_s2_nhwc": [(TConvSpec(32, 32, 64, 16, 3, 2, 1, 1), "ENet decoder 3x3 s2 (output_padding 1)"),
                                     (TConvSpec(16, 16, 64, 32, 3, 2, 1, 1), "ENet-lite decoder 3x3 s2 at 16x16")],
}


def _conv_def(s: ConvSpec, dtype: str):
    from tvm import te

    X = te.placeholder(s.x_shape, dtype, name="X")
    W = te.placeholder(s.w_shape, dtype, name="W")
    acc = conv2d_te(X, W, s, "float32")
    Y = acc if dtype == "float32" else te.compute(s.y_shape, lambda *i: acc(*i).astype(dtype), name="Y")
    return te.create_prim_func([X, W, Y])


def _tconv_def(s: TConvSpec):
    from tvm import te

    X = te.placeholder(s.x_shape, "float32", name="X")
    W = te.placeholder(s.w_shape, "float32", name="W")
    return te.create_prim_func([X, W, tconv2d_te(X, W, s)])


def _dense_def(k: int, n: int, dtype: str):
    from tvm import te

    X = te.placeholder((1, k), dtype, name="X")
    W = te.placeholder((k, n), dtype, name="W")
    B = te.placeholder((n,), dtype, name="B")
    r = te.reduce_axis((0, k), name="rk")
    acc = te.compute((1, n), lambda i, j: te.sum(X[i, r].astype("float32") * W[r, j].astype("float32"), axis=r),
                     name="acc")
    Y = te.compute((1, n), lambda i, j: (acc[i, j] + B[j].astype("float32")).astype(dtype), name="Y")
    return te.create_prim_func([X, W, B, Y])


def _conv_tag(s: ConvSpec) -> str:
    return shape_tag(s.h, s.w, s.cin, s.cout)


def _conv_tasks(table, dtype: str) -> list[Task]:
    out_tasks = []
    for pattern, entries in table.items():
        for s, src in entries:
            out_tasks.append(make_task(
                level=1, pattern=pattern, tag=_conv_tag(s), domain="vision", layout=s.layout, dtype=dtype,
                args=(inp("X", s.x_shape, dtype), inp("W", s.w_shape, dtype), out("Y", s.y_shape, dtype)),
                build=partial(_conv_def, s, dtype), reference=partial(conv2d_ref, s=s), flops=2 * s.macs,
                description=f"{src} ({s.kh}x{s.kw} s{s.stride} d{s.dilation} g{s.groups}, pads {s.pads}"
                            f"{', fp32 accumulate' if dtype != 'float32' else ''})"))
    return out_tasks


def tasks() -> list[Task]:
    ts = _conv_tasks(CONVS, "float32") + _conv_tasks(CONVS_F16, "float16")
    for pattern, entries in TCONVS.items():
        for s, src in entries:
            ts.append(make_task(
                level=1, pattern=pattern, tag=shape_tag(s.h, s.w, s.cin, s.cout), domain="vision", layout=s.layout,
                args=(inp("X", s.x_shape), inp("W", s.w_shape), out("Y", s.y_shape)),
                build=partial(_tconv_def, s), reference=partial(tconv2d_ref, s=s), flops=2 * s.macs,
                description=f"{src} (transposed conv k{s.k} s{s.stride} pad {s.pad} -> {s.oh}x{s.ow})"))
    for pattern, dtype, shapes in (
            ("dense_bias", "float32", [(1024, 1000, "MobileNetV1 classifier 1024->1000"),
                                       (256, 2, "VWW MobileNetV1-0.25 head 256->2")]),
            ("dense_bias_f16", "float16", [(1280, 1000, "MobileNetV2 classifier 1280->1000 fp16"),
                                           (576, 1024, "MobileNetV3-Small head 576->1024 fp16")])):
        for k, n, src in shapes:
            ts.append(make_task(
                level=1, pattern=pattern, tag=shape_tag(k, n), domain="vision", layout="row-major", dtype=dtype,
                args=(inp("X", (1, k), dtype), inp("W", (k, n), dtype), inp("B", (n,), dtype), out("Y", (1, n), dtype)),
                build=partial(_dense_def, k, n, dtype),
                reference=lambda x, w, b: x.astype("float64") @ w.astype("float64") + b.astype("float64"),
                flops=2 * k * n + n, description=f"{src} (batch-1 GEMV + bias, fp32 accumulate)"))
    return ts
