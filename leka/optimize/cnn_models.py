"""Two CNN benchmark models in the suite's Graph builder: a SqueezeNet-class net (fire modules) and a
MobileNet-style depthwise-separable block net, both batch 1, NCHW, ImageNet-style 3-channel input."""
from __future__ import annotations

from typing import Any


def _fire(g: Any, x: str, squeeze: int, expand: int) -> str:
    s = g.relu(g.conv(x, squeeze, 1))
    e1 = g.relu(g.conv(s, expand, 1))
    e3 = g.relu(g.conv(s, expand, 3))
    c_total = expand * 2
    shape = g.shapes[e1]
    return g.node("Concat", [e1, e3], (shape[0], c_total, shape[2], shape[3]), axis=1)


def squeezenet_mini() -> tuple[Any, list[str]]:
    """SqueezeNet 1.1 at 112x112 (stem 3x3 s2 64, max pools, 8 fire modules, conv 1x1 -> 100 classes)."""
    from benchmark.l3_graph import Graph

    g = Graph("squeezenet_mini")
    x = g.relu(g.conv(g.input("image", (1, 3, 112, 112)), 64, 3, stride=2, pads=[0, 0, 0, 0]))
    x = _maxpool(g, x)
    for sq, ex in ((16, 64), (16, 64)):
        x = _fire(g, x, sq, ex)
    x = _maxpool(g, x)
    for sq, ex in ((32, 128), (32, 128)):
        x = _fire(g, x, sq, ex)
    x = _maxpool(g, x)
    for sq, ex in ((48, 192), (48, 192), (64, 256), (64, 256)):
        x = _fire(g, x, sq, ex)
    x = g.relu(g.conv(x, 100, 1))
    x = g.reshape(g.global_avg_pool(x), (1, 100))
    return g, [g.softmax(x)]


def _maxpool(g: Any, x: str) -> str:
    n, c, h, w = g.shapes[x]
    oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
    return g.node("MaxPool", [x], (n, c, oh, ow), n * c * oh * ow * 9, kernel_shape=[3, 3], strides=[2, 2])


def mobilenet_blocks() -> tuple[Any, list[str]]:
    """MobileNetV1-0.5 style at 128x128: stem 3x3 s2 16, 9 DW3x3+PW blocks with ReLU6, GAP, FC 100."""
    from benchmark.l3_graph import Graph

    g = Graph("mobilenet_blocks")
    x = g.relu6(g.conv(g.input("image", (1, 3, 128, 128)), 16, 3, stride=2))
    c = 16
    for stride, cout in ((1, 32), (2, 64), (1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (1, 256), (2, 512)):
        x = g.relu6(g.conv(x, c, 3, stride=stride, group=c))
        x = g.relu6(g.conv(x, cout, 1))
        c = cout
    x = g.reshape(g.global_avg_pool(x), (1, c))
    return g, [g.softmax(g.dense(x, 100))]
