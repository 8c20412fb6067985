"""L3 graphs: mobile vision blocks (MobileNetV2, MobileNetEdgeTPU, MobileNetV3, ResNet) and an image
pre-processing + stem graph (shapes: edge-workloads-and-hardware.md §1.2-1.3, patterns #5, #10-14, #21-22)."""
from __future__ import annotations

from leka.tasks.task import Task

from .l3_graph import Graph, make_l3_task


def mbv2_inverted_residual(c_in: int, size: int, expand: int, c_out: int, stride: int):
    """MobileNetV2 block: PW expand + ReLU6, DW 3x3 (stride) + ReLU6, linear PW project, residual if shapes match."""
    def build() -> tuple[Graph, list[str]]:
        g = Graph(f"mbv2_ir_{c_in}_{c_out}_s{stride}")
        x = g.input("x", (1, c_in, size, size))
        hidden = c_in * expand
        y = g.relu6(g.conv(x, hidden, 1))
        y = g.relu6(g.conv(y, hidden, 3, stride=stride, group=hidden))
        y = g.conv(y, c_out, 1)
        return g, [g.add(x, y) if stride == 1 and c_in == c_out else y]
    return build


def edgetpu_fused_ibn() -> tuple[Graph, list[str]]:
    """MobileNetEdgeTPU fused-IBN (ef8, s2): regular 3x3 s2 expand 16->128 + ReLU, 1x1 project ->32."""
    g = Graph("edgetpu_fused_ibn")
    x = g.input("x", (1, 16, 112, 112))
    y = g.relu(g.conv(x, 128, 3, stride=2))
    return g, [g.conv(y, 32, 1)]


def edgetpu_ibn_k5() -> tuple[Graph, list[str]]:
    """MobileNetEdgeTPU IBN k5 (ef8, s2): 14x14x96 -> PW 768 + ReLU -> DW 5x5 s2 + ReLU -> PW 160."""
    g = Graph("edgetpu_ibn_k5_s2")
    x = g.input("x", (1, 96, 14, 14))
    y = g.relu(g.conv(x, 768, 1))
    y = g.relu(g.conv(y, 768, 5, stride=2, group=768))
    return g, [g.conv(y, 160, 1)]


def mbv3_se_block() -> tuple[Graph, list[str]]:
    """MobileNetV3 bneck (k5, exp 120, SE, hard-swish) at 28x28x40 with residual."""
    g = Graph("mbv3_se_hswish")
    x = g.input("x", (1, 40, 28, 28))
    y = g.hard_swish(g.conv(x, 120, 1))
    y = g.hard_swish(g.conv(y, 120, 5, group=120))
    s = g.relu(g.conv(g.global_avg_pool(y), 32, 1))  # squeeze-excite on 1x1 maps
    s = g.hard_sigmoid(g.conv(s, 120, 1))
    y = g.binary("Mul", y, s)
    return g, [g.add(x, g.conv(y, 40, 1))]


def resnet_block_s2() -> tuple[Graph, list[str]]:
    """ResNet basic block with downsampling: 3x3 s2 + ReLU + 3x3, 1x1 s2 projection, add, ReLU (32^2x16 -> 16^2x32)."""
    g = Graph("resnet_block_s2")
    x = g.input("x", (1, 16, 32, 32))
    y = g.conv(g.relu(g.conv(x, 32, 3, stride=2)), 32, 3)
    return g, [g.relu(g.add(y, g.conv(x, 32, 1, stride=2)))]


def preprocess_stem() -> tuple[Graph, list[str]]:
    """Camera frame to features: HWC -> CHW, (x - mean) / std per channel, stem conv 3x3 s2 3->32 + ReLU6."""
    g = Graph("preprocess_stem")
    x = g.input("frame_hwc", (1, 224, 224, 3), dist="positive")
    mean = g.input("mean", (1, 3, 1, 1), dist="positive")
    inv_std = g.input("inv_std", (1, 3, 1, 1), dist="positive")
    y = g.transpose(x, (0, 3, 1, 2))
    y = g.binary("Mul", g.binary("Sub", y, mean), inv_std)
    return g, [g.relu6(g.conv(y, 32, 3, stride=2))]


def tasks() -> list[Task]:
    return [
        make_l3_task("l3-mbv2-ir-56x24-s1", "mbv2-inverted-residual", "vision",
                     "MobileNetV2 inverted residual 56x56x24 -> 144 -> 24, ReLU6, residual (DeepLabv3 backbone)",
                     mbv2_inverted_residual(24, 56, 6, 24, 1)),
        make_l3_task("l3-mbv2-ir-56x24-s2", "mbv2-inverted-residual", "vision",
                     "MobileNetV2 inverted residual 56x56x24 -> 144 -> DW s2 -> 28x28x32, ReLU6",
                     mbv2_inverted_residual(24, 56, 6, 32, 2)),
        make_l3_task("l3-edgetpu-fused-ibn", "edgetpu-fused-ibn", "vision",
                     "MobileNetEdgeTPU fused-IBN ef8 s2: 112x112x16 -> 56x56x128 -> 32", edgetpu_fused_ibn),
        make_l3_task("l3-edgetpu-ibn-k5-s2", "edgetpu-ibn", "vision",
                     "MobileNetEdgeTPU IBN k5 ef8 s2: 14x14x96 -> 768 -> DW5x5 s2 -> 7x7x160", edgetpu_ibn_k5),
        make_l3_task("l3-mbv3-se-hswish", "mbv3-se-hswish", "vision",
                     "MobileNetV3 bneck k5 exp120 with squeeze-excite and hard-swish, 28x28x40, residual",
                     mbv3_se_block),
        make_l3_task("l3-resnet-block-s2", "resnet-basic-block", "vision",
                     "ResNet basic block, stride 2 with 1x1 projection shortcut, 32x32x16 -> 16x16x32",
                     resnet_block_s2),
        make_l3_task("l3-preprocess-stem-224", "preprocess-stem", "image-processing",
                     "HWC->CHW + per-channel normalize + stem conv 3x3 s2 3->32 ReLU6 on a 224x224 frame",
                     preprocess_stem),
    ]
