"""L3 graphs: the four MLPerf Tiny models, rebuilt from their layer lists, plus two audio front/back
ends (shapes: /work/shared/reference/edge-workloads-and-hardware.md §1.1 and §1.3 #24-28)."""
from __future__ import annotations

from leka.tasks.task import Task

from .l3_graph import Graph, make_l3_task


def ds_cnn_kws() -> tuple[Graph, list[str]]:
    """KWS DS-CNN: Conv 10x4 s2 'same' (H pads 4/5, W 1/1) 1->64, 4x [DW3x3 + PW 64], AvgPool 24x5, FC 12."""
    g = Graph("ds_cnn_kws")
    x = g.input("mfcc", (1, 1, 49, 10))
    x = g.relu(g.conv(x, 64, (10, 4), stride=2, pads=[4, 1, 5, 1]))
    for _ in range(4):
        x = g.relu(g.conv(x, 64, 3, group=64))
        x = g.relu(g.conv(x, 64, 1))
    x = g.reshape(g.avg_pool(x, (24, 5)), (1, 64))
    return g, [g.softmax(g.dense(x, 12))]


VWW_BLOCKS = [(1, 16), (2, 32), (1, 32), (2, 64), (1, 64), (2, 128), (1, 128), (1, 128), (1, 128), (1, 128),
              (1, 128), (2, 256), (1, 256)]


def mobilenet_v1_vww() -> tuple[Graph, list[str]]:
    """VWW MobileNetV1-0.25 at 96x96: stem 3x3 s2 3->8, 13 DW+PW blocks (ReLU), AvgPool 3x3, FC 2."""
    g = Graph("mobilenet_v1_025_vww")
    x = g.input("image", (1, 3, 96, 96))
    x = g.relu(g.conv(x, 8, 3, stride=2))
    c = 8
    for stride, cout in VWW_BLOCKS:
        x = g.relu(g.conv(x, c, 3, stride=stride, group=c))
        x = g.relu(g.conv(x, cout, 1))
        c = cout
    x = g.reshape(g.avg_pool(x, (3, 3)), (1, 256))
    return g, [g.softmax(g.dense(x, 2))]


def resnet8() -> tuple[Graph, list[str]]:
    """IC ResNet-8 (CIFAR-10, 32x32): stem 3x3 16, three stacks 16/32/64 (s 1/2/2, 1x1 s2 projections)."""
    g = Graph("resnet8")
    x = g.relu(g.conv(g.input("image", (1, 3, 32, 32)), 16, 3))
    c = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        y = g.relu(g.conv(x, cout, 3, stride=stride))
        y = g.conv(y, cout, 3)
        short = x if (stride == 1 and cout == c) else g.conv(x, cout, 1, stride=stride)
        x = g.relu(g.add(y, short))
        c = cout
    x = g.reshape(g.avg_pool(x, (8, 8)), (1, 64))
    return g, [g.softmax(g.dense(x, 10))]


def fc_autoencoder(batch: int):
    """AD autoencoder: Dense 640->128x4->8->128x4->640, ReLU after the first 9 (BN folded)."""
    def build() -> tuple[Graph, list[str]]:
        g = Graph(f"fc_autoencoder_b{batch}")
        x = g.input("features", (batch, 640))
        widths = [128, 128, 128, 128, 8, 128, 128, 128, 128]
        for w in widths:
            x = g.relu(g.dense(x, w))
        return g, [g.dense(x, 640)]
    return build


def mfcc_frontend() -> tuple[Graph, list[str]]:
    """KWS front end after the FFT: power spectrum 49x257 -> mel filterbank (40) -> log -> DCT-II (10)."""
    g = Graph("mfcc_frontend")
    p = g.input("power", (49, 257), dist="positive")
    mel = g.input("mel_fb", (257, 40), dist="positive")  # filterbank weights are non-negative
    dct = g.weight("dct", (40, 10), fan_in=40)
    logmel = g.unary("Log", g.add(g.matmul(p, mel), g.const(1e-6)))
    return g, [g.matmul(logmel, dct)]


def ds_tcn_block(channels: int = 128, frames: int = 49, k: int = 5):
    """Streaming-wakeword DS-TCN block: causal temporal depthwise conv (left pad k-1), PW, ReLU, residual."""
    def build() -> tuple[Graph, list[str]]:
        g = Graph(f"ds_tcn_c{channels}_k{k}")
        x = g.input("frames", (1, channels, 1, frames))
        y = g.conv(x, channels, (1, k), pads=[0, k - 1, 0, 0], group=channels)
        y = g.relu(g.conv(y, channels, 1))
        return g, [g.add(x, y)]
    return build


def tasks() -> list[Task]:
    return [
        make_l3_task("l3-kws-dscnn", "ds-cnn", "speech-audio",
                     "MLPerf Tiny KWS DS-CNN (49x10 MFCC -> 12 classes), full model", ds_cnn_kws, ("mlperf-tiny",)),
        make_l3_task("l3-vww-mobilenetv1-025", "mobilenet-v1", "vision",
                     "MLPerf Tiny VWW MobileNetV1 0.25 at 96x96, full model", mobilenet_v1_vww, ("mlperf-tiny",)),
        make_l3_task("l3-ic-resnet8", "resnet-8", "vision",
                     "MLPerf Tiny IC ResNet-8 (CIFAR-10 32x32), full model", resnet8, ("mlperf-tiny",)),
        make_l3_task("l3-ad-autoencoder-b1", "fc-autoencoder", "anomaly-detection",
                     "MLPerf Tiny AD FC autoencoder, one 640-d vector (GEMV chain)", fc_autoencoder(1),
                     ("mlperf-tiny",)),
        make_l3_task("l3-ad-autoencoder-b64", "fc-autoencoder", "anomaly-detection",
                     "MLPerf Tiny AD FC autoencoder, 64 vectors of a clip at once (GEMM chain)", fc_autoencoder(64),
                     ("mlperf-tiny",)),
        make_l3_task("l3-mfcc-frontend", "mfcc-frontend", "speech-audio",
                     "KWS MFCC back half: 49x257 power -> 40 mels -> log -> 10 DCT coefficients", mfcc_frontend),
        make_l3_task("l3-dstcn-block-k5", "ds-tcn-block", "speech-audio",
                     "streaming wakeword DS-TCN block: causal DW conv1d k=5 over 49 frames, C=128, PW, residual",
                     ds_tcn_block(128, 49, 5)),
        make_l3_task("l3-dstcn-block-k15", "ds-tcn-block", "speech-audio",
                     "streaming wakeword DS-TCN block: causal DW conv1d k=15 over 49 frames, C=32, PW, residual",
                     ds_tcn_block(32, 49, 15)),
    ]
