"""The three example workloads shipped with candidates under examples/ (one per target family).

They are ordinary suite tasks: matmul (vision/NLP GEMM), depthwise conv 3x3 (DS-CNN KWS block),
softmax over keys (MobileBERT-like attention rows).
"""
from __future__ import annotations

import numpy as np

from leka.tasks.task import ArgSpec, Task


def _matmul_def(m: int, n: int, k: int, dtype: str):
    from tvm import te

    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _dwconv_def(h: int, w: int, c: int):
    """NHWC depthwise 3x3, stride 1, 'same' padding (DS-CNN KWS: 25x5x64)."""
    from tvm import te

    X = te.placeholder((1, h, w, c), "float32", name="X")
    W = te.placeholder((3, 3, c), "float32", name="W")
    P = te.compute((1, h + 2, w + 2, c), lambda n, y, x, ch: te.if_then_else(
        te.all(y >= 1, y <= h, x >= 1, x <= w), X[n, y - 1, x - 1, ch], 0.0), name="pad")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((1, h, w, c), lambda n, y, x, ch: te.sum(P[n, y + ry, x + rx, ch] * W[ry, rx, ch],
                                                            axis=[ry, rx]), name="Y")
    return te.create_prim_func([X, W, Y])


def _dwconv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    _, h, wd, c = x.shape
    p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = np.zeros_like(x)
    for dy in range(3):
        for dx in range(3):
            y += p[:, dy:dy + h, dx:dx + wd, :] * w[dy, dx, :]
    return y


def _softmax_def(rows: int, cols: int):
    from tvm import te

    X = te.placeholder((rows, cols), "float32", name="X")
    k1 = te.reduce_axis((0, cols), name="k1")
    mx = te.compute((rows,), lambda i: te.max(X[i, k1], axis=k1), name="rowmax")
    e = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - mx[i]), name="exp")
    k2 = te.reduce_axis((0, cols), name="k2")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="rowsum")
    Y = te.compute((rows, cols), lambda i, j: e[i, j] / s[i], name="Y")
    return te.create_prim_func([X, Y])


def _softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def tasks() -> list[Task]:
    m = n = k = 256
    h, w, c = 25, 5, 64
    rows, cols = 512, 384
    return [
        Task(id="ex-matmul-256", pattern="matmul", level=1, domain="nlp", dtype="float32", layout="row-major",
             args=(ArgSpec("A", (m, k), "float32"), ArgSpec("B", (k, n), "float32"),
                   ArgSpec("C", (m, n), "float32", "output")),
             build=lambda: _matmul_def(m, n, k, "float32"), reference=lambda a, b: a @ b,
             flops=2 * m * n * k, bytes=4 * (m * k + k * n + m * n),
             description="fp32 GEMM 256x256x256 (example task with shipped candidates)"),
        Task(id="ex-dwconv3x3-kws", pattern="depthwise_conv2d_3x3_s1", level=1, domain="speech-audio",
             dtype="float32", layout="NHWC",
             args=(ArgSpec("X", (1, h, w, c), "float32"), ArgSpec("W", (3, 3, c), "float32"),
                   ArgSpec("Y", (1, h, w, c), "float32", "output")),
             build=lambda: _dwconv_def(h, w, c), reference=_dwconv_ref,
             flops=2 * 9 * h * w * c, bytes=4 * (2 * h * w * c + 9 * c),
             description="depthwise 3x3 s1 'same' on 25x5x64 (DS-CNN KWS block; example task)"),
        Task(id="ex-softmax-512x384", pattern="softmax_lastdim", level=1, domain="nlp", dtype="float32",
             args=(ArgSpec("X", (rows, cols), "float32"), ArgSpec("Y", (rows, cols), "float32", "output")),
             build=lambda: _softmax_def(rows, cols), reference=_softmax_ref,
             flops=5 * rows * cols, bytes=4 * 2 * rows * cols,
             description="row softmax 512x384 (attention rows, MobileBERT seq 384; example task)"),
    ]
