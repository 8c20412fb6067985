"""L1 vision activations and per-channel affine ops (batch-norm inference, PReLU).

Each activation gets two feature-map shapes from a network that uses it. fp16 variants compute the
function in fp32 and store fp16 (how mixed-precision runtimes evaluate transcendentals).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag
from benchmark._lib.elementwise import ACTIVATIONS, apply_act_np, bn_def, bn_ref, unary_def
from leka.tasks.task import Task

# activation -> [(shape, source)]
ACT_SHAPES: dict[str, list[tuple[tuple[int, ...], str]]] = {
    "relu": [((1, 48, 48, 16), "VWW MobileNetV1-0.25 block 48x48x16"), ((1, 32, 32, 16), "ResNet-8 stack 1")],
    "relu6": [((1, 56, 56, 24), "MobileNetV2 56x56x24"), ((1, 14, 14, 384), "MobileNetV2 expanded 14x14x384")],
    "hardswish": [((1, 112, 112, 16), "MobileNetV3 stem output"), ((1, 14, 14, 240), "MobileNetV3 14x14x240")],
    "hardsigmoid": [((1, 1, 1, 96), "MobileNetV3 SE gate vector (96)"), ((1, 1, 1, 576), "MobileNetV3 SE gate (576)")],
    "sigmoid": [((1, 2034, 91), "SSD-MobileDet 320 class scores (2034 anchors x 91)"),
                ((1, 6300, 85), "YOLOv5n@320 raw head (6300 anchors x 85)")],
    "silu": [((1, 112, 112, 32), "EfficientNet-B0 stem 112x112x32"), ((1, 40, 40, 64), "YOLOv5n@320 40x40x64")],
    "gelu_erf": [((1, 4, 256, 128), "MobileViT-XXS transformer FFN (4x256 tokens, 128)"),
                 ((1, 28, 28, 192), "EdgeNeXt-XXS MLP hidden 28x28x192")],
    "gelu_tanh": [((1, 49, 1792), "EfficientFormer-L1 last-stage MLP (49 tokens x 1792)"),
                  ((1, 196, 768), "EfficientFormer-L1 stage-3 MLP (196 x 768)")],
    "mish": [((1, 52, 52, 64), "YOLOv4 CSPDarknet 52x52x64 (at 416)"), ((1, 26, 26, 128), "YOLOv4 26x26x128")],
    "leaky_relu": [((1, 208, 208, 16), "YOLOv3-tiny first layer at 416"), ((1, 26, 26, 256), "YOLOv3-tiny 26x26x256")],
    "elu": [((1, 32, 32, 64), "ELU feature map 32x32x64"), ((1, 8, 8, 256), "ELU feature map 8x8x256")],
    "softplus": [((1, 40, 40, 32), "softplus feature map 40x40x32"), ((1, 20, 20, 128), "softplus 20x20x128")],
    "tanh": [((1, 256, 256, 3), "fast style transfer output layer 256x256x3"),
             ((1, 64, 64, 64), "ESPCN hidden tanh 64x64x64")],
    "hardtanh": [((1, 32, 32, 32), "clip [-1,1] activation (binarised/quant-friendly nets)"),
                 ((1, 8, 8, 256), "clip [-1,1] at 8x8x256")],
}
ACT_SHAPES_F16: dict[str, list[tuple[tuple[int, ...], str]]] = {
    "relu6": [((1, 56, 56, 144), "MobileNetV2 expanded 56x56x144"), ((1, 7, 7, 960), "MobileNetV2 7x7x960")],
    "hardswish": [((1, 28, 28, 120), "MobileNetV3 28x28x120"), ((1, 7, 7, 576), "MobileNetV3-Small 7x7x576")],
    "sigmoid": [((1, 2034, 91), "SSD-MobileDet class scores"), ((1, 1917, 91), "SSD-MobileNetV2@300 class scores")],
    "silu": [((1, 40, 40, 64), "YOLOv5n@320 40x40x64"), ((1, 56, 56, 48), "EfficientNet-Lite 56x56x48")],
    "gelu_erf": [((1, 4, 256, 128), "MobileViT-XXS FFN"), ((1, 4, 64, 160), "MobileViT-XXS stage-4 FFN")],
}


def _prelu_def(shape, layout):
    from tvm import te, tirx

    X = te.placeholder(shape, "float32", name="X")
    A = te.placeholder((shape[-1] if layout == "NHWC" else shape[1],), "float32", name="alpha")
    ax = len(shape) - 1 if layout == "NHWC" else 1
    Y = te.compute(shape, lambda *i: te.if_then_else(X(*i) > tirx.const(0.0, "float32"), X(*i), A[i[ax]] * X(*i)),
                   name="Y")
    return te.create_prim_func([X, A, Y])


def _prelu_ref(x, a, layout):
    a = a.reshape((1, 1, 1, -1) if layout == "NHWC" else (1, -1, 1, 1))
    return np.where(x > 0, x, a * x)


def _bn_inputs(shape, layout, dtype, rng, dist):
    from benchmark._lib.elementwise import bn_np_params
    from leka.tasks.task import generate

    c = shape[-1] if layout == "NHWC" else shape[1]
    return [generate(inp("X", shape, dtype), rng, dist)] + bn_np_params(c, rng)


def tasks() -> list[Task]:
    ts: list[Task] = []
    for table, dtype, sfx in ((ACT_SHAPES, "float32", ""), (ACT_SHAPES_F16, "float16", "_f16")):
        for act, entries in table.items():
            a = ACTIVATIONS[act]
            for shape, src in entries:
                n = numel(shape)
                ts.append(make_task(
                    level=1, pattern=f"{act}{sfx}", tag=shape_tag(shape[1:]), domain="vision", dtype=dtype,
                    args=(inp("X", shape, dtype), out("Y", shape, dtype)), build=partial(unary_def, act, shape, dtype),
                    reference=partial(apply_act_np, act), flops=a.flops * n,
                    description=f"{act} on {src} ({a.source}){'; fp32 math, fp16 storage' if sfx else ''}"))
    for layout, shape, src in (("NHWC", (1, 128, 128, 16), "ENet initial block PReLU 128x128x16"),
                               ("NHWC", (1, 32, 32, 128), "ENet stage-2 PReLU 32x32x128"),
                               ("NCHW", (1, 64, 64, 64), "ENet bottleneck PReLU, NCHW 64x64x64"),
                               ("NCHW", (1, 16, 128, 128), "ENet stage-1 PReLU, NCHW 16x128x128")):
        c = shape[-1] if layout == "NHWC" else shape[1]
        ts.append(make_task(
            level=1, pattern=f"prelu_channel_{layout.lower()}", tag=shape_tag(shape[1:]), domain="vision",
            layout=layout, args=(inp("X", shape), inp("alpha", (c,), dist="positive"), out("Y", shape)),
            build=partial(_prelu_def, shape, layout), reference=partial(_prelu_ref, layout=layout), flops=2 * numel(shape),
            description=f"per-channel PReLU: {src}"))
    for layout, dtype, shape, src in (
            ("NHWC", "float32", (1, 25, 5, 64), "DS-CNN KWS batch-norm 25x5x64"),
            ("NHWC", "float32", (1, 32, 32, 16), "ResNet-8 batch-norm 32x32x16"),
            ("NCHW", "float32", (1, 64, 28, 28), "ResNet-18 layer2 batch-norm, NCHW"),
            ("NCHW", "float32", (1, 96, 56, 56), "MobileNetV2 expanded 56x56x96 batch-norm, NCHW"),
            ("NHWC", "float16", (1, 28, 28, 96), "MobileNetV2 batch-norm 28x28x96 fp16"),
            ("NHWC", "float16", (1, 14, 14, 384), "MobileNetV2 batch-norm 14x14x384 fp16")):
        c = shape[-1] if layout == "NHWC" else shape[1]
        sfx = "_f16" if dtype == "float16" else ""
        ts.append(make_task(
            level=1, pattern=f"batchnorm_inference_{layout.lower()}{sfx}", tag=shape_tag(shape[1:]), domain="vision",
            layout=layout, dtype=dtype,
            args=(inp("X", shape, dtype), inp("gamma", (c,)), inp("beta", (c,)), inp("mean", (c,)),
                  inp("var", (c,), dist="positive"), out("Y", shape, dtype)),
            build=partial(bn_def, shape, layout, dtype), reference=partial(bn_ref, layout=layout),
            make_inputs=partial(_bn_inputs, shape, layout, dtype), flops=4 * numel(shape),
            description=f"inference batch-norm (eps 1e-3, stats as inputs): {src}"))
    return ts
