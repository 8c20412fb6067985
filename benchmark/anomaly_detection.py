"""Anomaly-detection kernels (L1 + L2): the MLPerf Tiny AD FC autoencoder (640->128->...->8->...->640,
Dense + BN + ReLU) as GEMV/GEMM pieces (fp32/fp16/int8), reconstruction error, z-score, and the
streaming EWMA z-score and CUSUM detectors (TVMScript scans).
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import MCU_SCRATCH, In, Out, int8_gemm_scale, make_task, matmul, matmul_i8, matmul_i8_np
from ._lib.norm import batchnorm_relu, batchnorm_relu_np
from ._lib.reduce import scan_task

D = "anomaly-detection"
AD = "MLPerf Tiny AD autoencoder"


def dense_bn_relu(b: int, k: int, n: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(X, W, Bi, Mu, Var, G, Be):
        return batchnorm_relu(matmul(X, W, bias=Bi, name="fc"), Mu, Var, G, Be)

    return make_task(
        pattern="dense_bn_relu",
        tag=f"{b}x{k}x{n}",
        level=2,
        domain=D,
        ins=[
            In("X", (b, k), dtype, dist="uniform"),
            In("W", (k, n), dtype, dist="uniform"),
            In("Bi", (n,), dtype),
            In("Mu", (n,)),
            In("Var", (n,), dist="positive"),
            In("G", (n,)),
            In("Be", (n,)),
        ],
        outs=[Out("Y", (b, n), dtype)],
        te_fn=te_fn,
        ref=lambda x, w, bi, mu, v, g, be: batchnorm_relu_np(x @ w + bi, mu, v, g, be),
        flops=2 * b * k * n + 5 * b * n,
        desc=f"Dense {k}->{n} + bias + BatchNorm (inference) + ReLU, {b} vectors ({src}"
        + ("; fp16 in, fp32 accumulation)" if dtype == "float16" else ")"),
    )


def dense_i8_relu(b: int, k: int, n: int, src: str) -> Task:
    mult, shift = int8_gemm_scale(k)
    return make_task(
        pattern="dense_relu_folded_bn",
        tag=f"{b}x{k}x{n}",
        level=2,
        domain=D,
        layout="W[N,K]",
        ins=[In("X", (b, k), "int8"), In("W", (n, k), "int8", low=-127), In("B", (n,), "int32", low=-4096, high=4096)],
        outs=[Out("Y", (b, n), "int8")],
        te_fn=lambda X, W, B: matmul_i8(X, W, B, mult, shift, relu=True),
        ref=lambda x, w, bb: matmul_i8_np(x, w, bb, mult, shift, relu=True),
        flops=2 * b * k * n,
        scratch_budget=MCU_SCRATCH,
        desc=f"int8 Dense {k}->{n} with BN folded into weights/bias, requant + ReLU, {b} vectors ({src})",
    )


def bottleneck(b: int, d: int, z: int, src: str) -> Task:
    def te_fn(X, W1, B1, W2, B2):
        from tvm import te

        H = matmul(X, W1, bias=B1, name="enc")
        Z = te.compute((b, z), lambda i, j: te.max(H[i, j], 0.0), name="code")
        O2 = matmul(Z, W2, bias=B2, name="dec")
        return te.compute((b, d), lambda i, j: te.max(O2[i, j], 0.0), name="Y")

    return make_task(
        pattern="ae_bottleneck_enc_dec",
        tag=f"{b}x{d}x{z}",
        level=2,
        domain=D,
        ins=[In("X", (b, d)), In("W1", (d, z)), In("B1", (z,)), In("W2", (z, d)), In("B2", (d,))],
        outs=[Out("Y", (b, d))],
        te_fn=te_fn,
        ref=lambda x, w1, b1, w2, b2: np.maximum(np.maximum(x @ w1 + b1, 0) @ w2 + b2, 0),
        flops=4 * b * d * z,
        desc=f"autoencoder bottleneck {d}->{z}->{d} (Dense+ReLU twice), {b} vectors ({src})",
    )


def output_recon_error(b: int, k: int, d: int, src: str) -> Task:
    def te_fn(H, W, Bi, X):
        from tvm import te

        R = matmul(H, W, bias=Bi, name="recon")
        r = te.reduce_axis((0, d), "j")
        S = te.compute((b,), lambda i: te.sum((R[i, r] - X[i, r]) * (R[i, r] - X[i, r]), axis=r), name="sse")
        return te.compute((b,), lambda i: S[i] * (1.0 / d), name="Y")

    return make_task(
        pattern="dense_recon_mse",
        tag=f"{b}x{k}x{d}",
        level=2,
        domain=D,
        ins=[In("H", (b, k)), In("W", (k, d)), In("Bi", (d,)), In("X", (b, d))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda h, w, bi, x: ((h @ w + bi - x) ** 2).mean(1),
        flops=2 * b * k * d + 3 * b * d,
        desc=f"output Dense {k}->{d} + per-vector reconstruction MSE (anomaly score), {b} vectors ({src})",
    )


def recon_mse(b: int, d: int, src: str) -> Task:
    def te_fn(X, R):
        from tvm import te

        r = te.reduce_axis((0, d), "j")
        S = te.compute((b,), lambda i: te.sum((X[i, r] - R[i, r]) * (X[i, r] - R[i, r]), axis=r), name="sse")
        return te.compute((b,), lambda i: S[i] * (1.0 / d), name="Y")

    return make_task(
        pattern="reconstruction_mse",
        tag=f"{b}x{d}",
        level=1,
        domain=D,
        ins=[In("X", (b, d)), In("R", (b, d))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda x, r: ((x - r) ** 2).mean(1),
        flops=3 * b * d,
        desc=f"per-vector mean squared reconstruction error, {b} x {d} ({src})",
    )


def zscore_apply(b: int, d: int, src: str) -> Task:
    def te_fn(X, Mu, Sd):
        from tvm import te

        return te.compute((b, d), lambda i, j: (X[i, j] - Mu[j]) / Sd[j], name="Y")

    return make_task(
        pattern="zscore_normalise",
        tag=f"{b}x{d}",
        level=1,
        domain=D,
        ins=[In("X", (b, d)), In("Mu", (d,)), In("Sd", (d,), dist="positive")],
        outs=[Out("Y", (b, d))],
        te_fn=te_fn,
        ref=lambda x, mu, sd: (x - mu) / sd,
        flops=2 * b * d,
        desc=f"z-score normalisation with training mean/std, {b} x {d} ({src})",
    )


def ewma_zscore(c: int, n: int, src: str, a: float = 0.05) -> Task:
    allocs = f'M = T.sblock_alloc_buffer(({c}, {n}), "float32")\nV = T.sblock_alloc_buffer(({c}, {n}), "float32")'
    pm = "T.if_then_else(vt > 0, M[vc, vt - 1], T.float32(0))"
    pv = "T.if_then_else(vt > 0, V[vc, vt - 1], T.float32(1))"
    body = (
        f"Y[vc, vt] = (X[vc, vt] - {pm}) / T.sqrt({pv} + T.float32(1e-6))\n"
        f"M[vc, vt] = {pm} + T.float32({a}) * (X[vc, vt] - {pm})\n"
        f"V[vc, vt] = T.float32({1 - a}) * ({pv} + T.float32({a}) * (X[vc, vt] - {pm}) * (X[vc, vt] - {pm}))"
    )

    def ref(x):
        y, m, v = np.empty_like(x), np.zeros(c, np.float32), np.ones(c, np.float32)
        for t in range(n):
            d = x[:, t] - m
            y[:, t] = d / np.sqrt(v + np.float32(1e-6))
            m, v = m + np.float32(a) * d, np.float32(1 - a) * (v + np.float32(a) * d * d)
        return y

    return scan_task(
        "ewma_zscore_stream",
        c,
        n,
        body,
        ref,
        10 * c * n,
        f"streaming EWMA mean/variance and the z-score of each sample against them (α = {a}) ({src})",
        domain=D,
        allocs=allocs,
    )


def cusum(c: int, n: int, src: str, k: float = 0.5) -> Task:
    prev = "T.if_then_else(vt > 0, Y[vc, vt - 1], T.float32(0))"
    body = f"Y[vc, vt] = T.max(T.float32(0), {prev} + X[vc, vt] - T.float32({k}))"

    def ref(x):
        y, s = np.empty_like(x), np.zeros(c, np.float32)
        for t in range(n):
            s = np.maximum(0, s + x[:, t] - np.float32(k))
            y[:, t] = s
        return y

    return scan_task(
        "cusum_upper",
        c,
        n,
        body,
        ref,
        3 * c * n,
        f"one-sided CUSUM change detector S = max(0, S + x - {k}) ({src})",
        domain=D,
    )


def tasks() -> list[Task]:
    return [
        dense_bn_relu(1, 640, 128, AD + " layer 1 (GEMV)"),
        dense_bn_relu(32, 128, 128, AD + " hidden, 32 vectors"),
        dense_bn_relu(1, 640, 128, AD + " layer 1", "float16"),
        dense_bn_relu(32, 128, 128, AD + " hidden", "float16"),
        dense_i8_relu(1, 640, 128, AD + " int8 layer 1"),
        dense_i8_relu(64, 128, 128, AD + " int8 hidden, 64 vectors"),
        bottleneck(1, 128, 8, AD + " code layer"),
        bottleneck(64, 128, 8, AD + " batch of 64 frames"),
        output_recon_error(8, 128, 640, AD + " output, 8 vectors"),
        output_recon_error(32, 128, 640, AD + " 32 vectors"),
        recon_mse(309, 640, AD + " 10 s clip (309 vectors)"),
        recon_mse(64, 128, "sensor AE"),
        zscore_apply(309, 640, AD + " input scaling"),
        zscore_apply(1000, 32, "IoT sensor features"),
        ewma_zscore(8, 1024, "multichannel telemetry"),
        ewma_zscore(32, 256, "server metrics"),
        cusum(8, 1024, "process monitoring"),
        cusum(2, 4096, "dual-sensor drift"),
    ]
