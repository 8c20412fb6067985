"""Anomaly scoring kernels on windows and embeddings (L1 + L2): rolling mean/std, Deep SVDD score,
max-softmax-probability, window-to-window cosine change, int8 autoencoder output + dequantised MSE.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, int8_gemm_scale, make_task, matmul
from ._lib.reduce import softmax_lastdim, softmax_np

D = "anomaly-detection"


def rolling_mean_std(c: int, n: int, w: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        a, b = te.reduce_axis((0, w), "a"), te.reduce_axis((0, w), "b")
        s1 = te.compute((c, n), lambda ch, i: te.sum(X[ch, i + a], axis=a), name="s1")
        s2 = te.compute((c, n), lambda ch, i: te.sum(X[ch, i + b] * X[ch, i + b], axis=b), name="s2")
        M = te.compute((c, n), lambda ch, i: s1[ch, i] * (1.0 / w), name="M")
        S = te.compute(
            (c, n), lambda ch, i: te.sqrt(te.max(s2[ch, i] * (1.0 / w) - M[ch, i] * M[ch, i], 0.0) + 1e-9), name="S"
        )
        return M, S

    def ref(x):
        win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), w, axis=1)
        return win.mean(-1), np.sqrt(win.var(-1) + 1e-9)

    return make_task(
        pattern="rolling_mean_std",
        tag=f"{c}x{n}w{w}",
        level=1,
        domain=D,
        layout="[C,N]",
        ins=[In("X", (c, n + w - 1), dist="uniform")],
        outs=[Out("M", (c, n)), Out("S", (c, n))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * c * n * w,
        rtol=1e-3,
        desc=f"rolling mean and std over a {w}-sample window, {c} channels x {n} ({src}; rtol 1e-3: E[x²]-E[x]² form)",
    )


def deep_svdd(b: int, k: int, h: int, src: str) -> Task:
    def te_fn(X, W, Bi, C):
        from tvm import te

        Hd = matmul(X, W, bias=Bi, name="fc")
        r = te.reduce_axis((0, h), "j")
        return te.compute(
            (b,), lambda i: te.sum((te.max(Hd[i, r], 0.0) - C[r]) * (te.max(Hd[i, r], 0.0) - C[r]), axis=r), name="Y"
        )

    return make_task(
        pattern="deep_svdd_score",
        tag=f"{b}x{k}x{h}",
        level=2,
        domain=D,
        ins=[In("X", (b, k)), In("W", (k, h)), In("Bi", (h,)), In("C", (h,))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda x, w, bi, c: ((np.maximum(x @ w + bi, 0) - c) ** 2).sum(1),
        flops=2 * b * k * h + 4 * b * h,
        desc=f"Deep SVDD score ||relu(xW + b) - c||², {k}->{h}, {b} vectors ({src})",
    )


def msp_score(b: int, k: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        P = softmax_lastdim(X, name="P")
        r = te.reduce_axis((0, k), "j")
        return te.compute((b,), lambda i: te.max(P[i, r], axis=r), name="Y")

    return make_task(
        pattern="max_softmax_prob_score",
        tag=f"{b}x{k}",
        level=1,
        domain=D,
        ins=[In("X", (b, k))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda x: softmax_np(x).max(1),
        flops=6 * b * k,
        desc=f"max softmax probability (baseline OOD confidence; low = anomalous), {b} x {k} classes ({src})",
    )


def window_change(t: int, d: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        a, b = te.reduce_axis((0, d), "a"), te.reduce_axis((0, d), "b")
        dot = te.compute((t - 1,), lambda i: te.sum(X[i, a] * X[i + 1, a], axis=a), name="dot")
        nn = te.compute((t,), lambda i: te.sum(X[i, b] * X[i, b], axis=b), name="norm2")
        return te.compute((t - 1,), lambda i: 1.0 - dot[i] * te.rsqrt(nn[i] * nn[i + 1] + 1e-12), name="Y")

    def ref(x):
        n2 = (x * x).sum(1)
        return 1 - (x[:-1] * x[1:]).sum(1) / np.sqrt(n2[:-1] * n2[1:] + 1e-12)

    return make_task(
        pattern="consecutive_cosine_change",
        tag=f"{t}x{d}",
        level=1,
        domain=D,
        ins=[In("X", (t, d))],
        outs=[Out("Y", (t - 1,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * t * d,
        desc=f"cosine distance between consecutive feature windows (change-point score), {t} x {d} ({src})",
    )


def dense_i8_dequant_mse(b: int, k: int, d: int, src: str) -> Task:
    mult, shift = int8_gemm_scale(k)
    out_scale, out_zp = 0.05, 3

    def te_fn(H, W, Bi, X):
        from tvm import te

        from ._lib.linalg import requant_te

        r = te.reduce_axis((0, k), "k")
        acc = te.compute(
            (b, d), lambda i, j: te.sum(H[i, r].astype("int32") * W[j, r].astype("int32"), axis=r), name="acc"
        )
        Q = te.compute((b, d), lambda i, j: requant_te(acc[i, j] + Bi[j], mult, shift, zp=out_zp), name="q")
        R = te.compute(
            (b, d), lambda i, j: (Q[i, j].astype("int32") - out_zp).astype("float32") * out_scale, name="recon"
        )
        q = te.reduce_axis((0, d), "j")
        S = te.compute((b,), lambda i: te.sum((R[i, q] - X[i, q]) * (R[i, q] - X[i, q]), axis=q), name="sse")
        return te.compute((b,), lambda i: S[i] * (1.0 / d), name="Y")

    def ref(h, w, bi, x):
        from ._lib.linalg import requant_np

        q = requant_np(h.astype(np.int32) @ w.astype(np.int32).T + bi, mult, shift, zp=out_zp)
        return (((q.astype(np.float32) - out_zp) * np.float32(out_scale) - x) ** 2).mean(1)

    return make_task(
        pattern="dense_dequant_mse",
        tag=f"{b}x{k}x{d}",
        level=2,
        domain=D,
        dtype="int8",
        ins=[
            In("H", (b, k), "int8"),
            In("W", (d, k), "int8", low=-127),
            In("Bi", (d,), "int32", low=-4096, high=4096),
            In("X", (b, d)),
        ],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * b * k * d + 4 * b * d,
        desc=f"int8 output Dense {k}->{d} + requant (zp {out_zp}) + dequantise + MSE vs the fp32 input ({src})",
    )


def tasks() -> list[Task]:
    ad = "MLPerf Tiny AD autoencoder"
    return [
        rolling_mean_std(8, 1024, 64, "telemetry channels"),
        rolling_mean_std(3, 4096, 256, "accelerometer 3-axis"),
        deep_svdd(64, 640, 32, "log-mel Deep SVDD"),
        deep_svdd(256, 64, 16, "sensor Deep SVDD"),
        msp_score(256, 10, "CIFAR-10 classifier"),
        msp_score(64, 1000, "ImageNet-class classifier"),
        window_change(309, 640, ad + " feature stream"),
        window_change(1000, 32, "sensor embedding stream"),
        dense_i8_dequant_mse(8, 128, 640, ad + " int8 output layer"),
        dense_i8_dequant_mse(64, 128, 128, "int8 sensor AE"),
    ]
