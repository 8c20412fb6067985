"""L1 vision pooling: max/avg with k2/k3/k5, stride 1/2, NHWC/NCHW, global, adaptive, fp16."""
from __future__ import annotations

from functools import partial

from benchmark._lib import inp, make_task, numel, out, shape_tag
from benchmark._lib.pool import (adaptive_avg_ref, adaptive_avg_te, global_pool_ref, global_pool_te, pool2d_ref,
                                 pool2d_te, pool_out)
from leka.tasks.task import Task

# pattern -> (kind, k, stride, layout, count_include_pad, [(in_shape, pads, source)])
WINDOW_POOLS = {
    "maxpool2d_2x2_s2_nhwc": ("max", 2, 2, "NHWC", False, [
        ((1, 208, 208, 16), (0, 0, 0, 0), "YOLOv3-tiny first maxpool at 416"),
        ((1, 26, 26, 256), (0, 0, 0, 0), "YOLOv3-tiny 26x26x256 maxpool")]),
    "maxpool2d_2x2_s2_nchw": ("max", 2, 2, "NCHW", False, [
        ((1, 6, 28, 28), (0, 0, 0, 0), "LeNet-5 subsampling after conv1"),
        ((1, 32, 64, 64), (0, 0, 0, 0), "UNet-lite encoder maxpool 64x64x32")]),
    "maxpool2d_3x3_s2_nhwc": ("max", 3, 2, "NHWC", False, [
        ((1, 112, 112, 24), (1, 1, 1, 1), "ShuffleNetV2 stem maxpool (pad 1)"),
        ((1, 56, 56, 64), (1, 1, 1, 1), "ResNet-18-style stem maxpool at half resolution (pad 1)")]),
    "maxpool2d_3x3_s2_nchw": ("max", 3, 2, "NCHW", False, [
        ((1, 64, 111, 111), (0, 0, 0, 0), "SqueezeNet 1.1 maxpool1 (valid)"),
        ((1, 128, 55, 55), (0, 0, 0, 0), "SqueezeNet 1.1 maxpool2 (valid)")]),
    "maxpool2d_5x5_s1_nhwc": ("max", 5, 1, "NHWC", False, [
        ((1, 10, 10, 128), (2, 2, 2, 2), "YOLOv5n SPPF maxpool at 320 input"),
        ((1, 20, 20, 128), (2, 2, 2, 2), "YOLOv5n SPPF maxpool at 640 input")]),
    "avgpool2d_2x2_s2_nhwc": ("avg", 2, 2, "NHWC", False, [
        ((1, 56, 56, 128), (0, 0, 0, 0), "DenseNet-121 transition-1 avgpool"),
        ((1, 28, 28, 256), (0, 0, 0, 0), "DenseNet-121 transition-2 avgpool")]),
    "avgpool2d_3x3_s1_nhwc": ("avg", 3, 1, "NHWC", False, [
        ((1, 35, 35, 192), (1, 1, 1, 1), "Inception-v3 pool branch (same, padding excluded)"),
        ((1, 17, 17, 768), (1, 1, 1, 1), "Inception-v3 17x17 pool branch (same, padding excluded)")]),
    "avgpool2d_3x3_s2_nchw": ("avg", 3, 2, "NCHW", True, [
        ((1, 24, 56, 56), (1, 1, 1, 1), "ShuffleNetV1 stride-2 shortcut avgpool (count_include_pad)"),
        ((1, 240, 28, 28), (1, 1, 1, 1), "ShuffleNetV1 stage-3 shortcut avgpool (count_include_pad)")]),
}
WINDOW_POOLS_F16 = {
    "maxpool2d_2x2_s2_nhwc_f16": ("max", 2, 2, "NHWC", False, [
        ((1, 104, 104, 32), (0, 0, 0, 0), "YOLOv3-tiny maxpool 104x104x32 fp16"),
        ((1, 52, 52, 64), (0, 0, 0, 0), "YOLOv3-tiny maxpool 52x52x64 fp16")]),
}
GLOBAL_POOLS = {
    "global_avgpool_nhwc": ("avg", "NHWC", "float32", [((1, 8, 8, 64), "ResNet-8 head"),
                                                        ((1, 7, 7, 1280), "MobileNetV2 head")]),
    "global_avgpool_nchw": ("avg", "NCHW", "float32", [((1, 576, 7, 7), "MobileNetV3-Small head"),
                                                        ((1, 1024, 7, 7), "MobileNetV1 head")]),
    "global_maxpool_nhwc": ("max", "NHWC", "float32", [((1, 14, 14, 96), "CBAM channel-attention max branch"),
                                                        ((1, 28, 28, 64), "CBAM channel-attention max 28x28")]),
    "global_avgpool_nhwc_f16": ("avg", "NHWC", "float16", [((1, 7, 7, 960), "MobileNetV3-Large head fp16"),
                                                            ((1, 24, 5, 172), "DS-CNN-M pooling fp16 (24x5x172)")]),
}


def _window_def(shape, kind, k, stride, pads, layout, cip, dtype):
    from tvm import te

    X = te.placeholder(shape, dtype, name="X")
    P = pool2d_te(X, kind, k, stride, pads, layout, cip)
    Y = te.compute(P.shape, lambda *i: P(*i).astype(dtype), name="Y")
    return te.create_prim_func([X, Y])


def _global_def(shape, kind, layout, dtype):
    from tvm import te

    X = te.placeholder(shape, dtype, name="X")
    P = global_pool_te(X, kind, layout)
    Y = te.compute(P.shape, lambda *i: P(*i).astype(dtype), name="Y")
    return te.create_prim_func([X, Y])


def _adaptive_def(shape, oh, ow):
    from tvm import te

    X = te.placeholder(shape, "float32", name="X")
    return te.create_prim_func([X, adaptive_avg_te(X, oh, ow)])


def tasks() -> list[Task]:
    ts: list[Task] = []
    for table, dtype in ((WINDOW_POOLS, "float32"), (WINDOW_POOLS_F16, "float16")):
        for pattern, (kind, k, stride, layout, cip, entries) in table.items():
            for shape, pads, src in entries:
                ha, wa = (1, 2) if layout == "NHWC" else (2, 3)
                oshape = list(shape)
                oshape[ha] = pool_out(shape[ha], k, stride, pads[0], pads[1])
                oshape[wa] = pool_out(shape[wa], k, stride, pads[2], pads[3])
                ts.append(make_task(
                    level=1, pattern=pattern, tag=shape_tag(shape[1:]), domain="vision", layout=layout, dtype=dtype,
                    args=(inp("X", shape, dtype), out("Y", oshape, dtype)),
                    build=partial(_window_def, shape, kind, k, stride, pads, layout, cip, dtype),
                    reference=partial(pool2d_ref, kind=kind, k=k, stride=stride, pads=pads, layout=layout,
                                      count_include_pad=cip),
                    flops=k * k * numel(oshape), description=f"{kind}pool {k}x{k} s{stride} pads {pads}: {src}"))
    for pattern, (kind, layout, dtype, entries) in GLOBAL_POOLS.items():
        for shape, src in entries:
            oshape = (1, 1, 1, shape[3]) if layout == "NHWC" else (1, shape[1], 1, 1)
            ts.append(make_task(
                level=1, pattern=pattern, tag=shape_tag(shape[1:]), domain="vision", layout=layout, dtype=dtype,
                args=(inp("X", shape, dtype), out("Y", oshape, dtype)),
                build=partial(_global_def, shape, kind, layout, dtype),
                reference=partial(global_pool_ref, kind=kind, layout=layout), flops=numel(shape),
                description=f"global {kind} pool: {src}"))
    for shape, (oh, ow), src in (((1, 256, 13, 13), (6, 6), "AlexNet adaptive avgpool 13x13 -> 6x6"),
                                 ((1, 64, 20, 20), (6, 6), "PSPNet bin-6 pyramid pooling (scaled), overlapping bins")):
        ts.append(make_task(
            level=1, pattern="adaptive_avgpool2d_nchw", tag=shape_tag(shape[1:], oh), domain="vision", layout="NCHW",
            args=(inp("X", shape), out("Y", (1, shape[1], oh, ow))), build=partial(_adaptive_def, shape, oh, ow),
            reference=partial(adaptive_avg_ref, oh=oh, ow=ow), flops=numel(shape) + shape[1] * oh * ow,
            description=f"{src} (PyTorch bins floor/ceil)"))
    return ts
