"""Signal analysis (L1 + L2): auto-/cross-correlation (fp32/fp16, normalised), linear-interpolation
resampling, normalised cross-correlation, FIR-bank energies, peak picking, min-max normalisation,
RMS AGC + soft limiter.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task
from ._lib.spectral import frames_np

D = "signal-processing"


def autocorr(n: int, lags: int, src: str, dtype: str = "float32", normalised: bool = False) -> Task:
    def te_fn(X):
        from tvm import te

        r = te.reduce_axis((0, n), "i")
        R = te.compute(
            (lags,),
            lambda l: te.sum(
                te.if_then_else(r + l < n, X[r].astype("float32") * X[te.min(r + l, n - 1)].astype("float32"), 0.0),
                axis=r,
            ),
            name="R",
        )
        if normalised:
            return te.compute((lags,), lambda l: R[l] / R[0], name="Y")
        return R if dtype == "float32" else te.compute((lags,), lambda l: R[l].astype(dtype), name="Y")

    def ref(x):
        r = np.correlate(x.astype(np.float64), x.astype(np.float64), mode="full")[n - 1 : n - 1 + lags]
        return r / r[0] if normalised else r

    return make_task(
        pattern="autocorr_normalised" if normalised else "autocorrelation",
        tag=f"{n}x{lags}",
        level=2 if normalised else 1,
        domain=D,
        ins=[In("X", (n,), dtype)],
        outs=[Out("Y" if normalised or dtype != "float32" else "R", (lags,), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=2 * n * lags,
        desc=f"autocorrelation, {lags} lags of a {n}-sample frame{' normalised by r[0]' if normalised else ''} ({src})",
    )


def xcorr(n: int, lags: int, src: str) -> Task:
    def te_fn(X, Y):
        from tvm import te

        r = te.reduce_axis((0, n), "i")
        return te.compute((lags,), lambda l: te.sum(X[r] * Y[r + l], axis=r), name="C")

    return make_task(
        pattern="cross_correlation",
        tag=f"{n}x{lags}",
        level=1,
        domain=D,
        ins=[In("X", (n,)), In("Y", (n + lags - 1,))],
        outs=[Out("C", (lags,))],
        te_fn=te_fn,
        ref=lambda x, y: np.correlate(y, x, mode="valid"),
        flops=2 * n * lags,
        desc=f"cross-correlation of a {n}-sample reference over {lags} lags (TDOA/echo delay) ({src})",
    )


def linear_resample(n_in: int, n_out: int, src: str) -> Task:
    ratio = (n_in - 1) / n_out

    def te_fn(X):
        from tvm import te

        def f(i):
            pos = i.astype("float32") * ratio
            j = te.floor(pos).astype("int32")
            fr = pos - j.astype("float32")
            return X[j] + fr * (X[j + 1] - X[j])

        return te.compute((n_out,), f, name="Y")

    def ref(x):
        pos = np.arange(n_out, dtype=np.float32) * np.float32(ratio)
        j = np.floor(pos).astype(np.int64)
        return x[j] + (pos - j) * (x[j + 1] - x[j])

    return make_task(
        pattern="linear_interp_resample",
        tag=f"{n_in}to{n_out}",
        level=1,
        domain=D,
        ins=[In("X", (n_in,))],
        outs=[Out("Y", (n_out,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * n_out,
        desc=f"linear-interpolation resampling {n_in} -> {n_out} samples ({src})",
    )


def ncc(n: int, m: int, src: str) -> Task:
    out = n - m + 1

    def te_fn(X, Tm):
        from tvm import te

        a, b, c = (te.reduce_axis((0, m), nm) for nm in "abc")
        dot = te.compute((out,), lambda i: te.sum(X[i + a] * Tm[a], axis=a), name="dot")
        en = te.compute((out,), lambda i: te.sum(X[i + b] * X[i + b], axis=b), name="energy")
        tn = te.compute((1,), lambda _: te.sum(Tm[c] * Tm[c], axis=c), name="tnorm")
        return te.compute((out,), lambda i: dot[i] * te.rsqrt(en[i] * tn[0] + 1e-12), name="Y")

    def ref(x, t):
        w = frames_np(x, m, 1, out)
        return (w @ t) / np.sqrt((w * w).sum(1) * (t @ t) + 1e-12)

    return make_task(
        pattern="normalised_xcorr",
        tag=f"{n}x{m}",
        level=2,
        domain=D,
        ins=[In("X", (n,)), In("Tm", (m,))],
        outs=[Out("Y", (out,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * out * m,
        desc=f"normalised cross-correlation of a {m}-sample template along {n} samples ({src})",
    )


def filterbank_energy(bands: int, taps: int, n: int, src: str) -> Task:
    def te_fn(X, H):
        from tvm import te

        r, t = te.reduce_axis((0, taps), "j"), te.reduce_axis((0, n), "t")
        Y = te.compute((bands, n), lambda b, i: te.sum(X[i + taps - 1 - r] * H[b, r], axis=r), name="bandpass")
        E = te.compute((bands,), lambda b: te.sum(Y[b, t] * Y[b, t], axis=t), name="esum")
        return te.compute((bands,), lambda b: E[b] * (1.0 / n), name="Y")

    def ref(x, h):
        y = np.stack([np.convolve(x, hb, mode="valid") for hb in h])
        return (y * y).mean(1)

    return make_task(
        pattern="fir_bank_energy",
        tag=f"{bands}x{taps}x{n}",
        level=2,
        domain=D,
        ins=[In("X", (n + taps - 1,)), In("H", (bands, taps))],
        outs=[Out("Y", (bands,))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * bands * n * (taps + 1),
        desc=f"{bands}-band FIR filter bank + mean-square energy per band ({src})",
    )


def peak_pick(c: int, n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        return te.compute(
            (c, n),
            lambda ch, i: te.if_then_else(
                te.all(X[ch, i + 1] > X[ch, i], X[ch, i + 1] >= X[ch, i + 2]), X[ch, i + 1], 0.0
            ),
            name="Y",
        )

    return make_task(
        pattern="peak_picking",
        tag=f"{c}x{n}",
        level=1,
        domain=D,
        ins=[In("X", (c, n + 2))],
        outs=[Out("Y", (c, n))],
        te_fn=te_fn,
        ref=lambda x: np.where((x[:, 1:-1] > x[:, :-2]) & (x[:, 1:-1] >= x[:, 2:]), x[:, 1:-1], 0.0),
        flops=2 * c * n,
        desc=f"local-maximum peak picking (keep peaks, zero elsewhere), {c}x{n} ({src})",
    )


def minmax_norm(c: int, n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        a, b = te.reduce_axis((0, n), "a"), te.reduce_axis((0, n), "b")
        lo = te.compute((c,), lambda ch: te.min(X[ch, a], axis=a), name="lo")
        hi = te.compute((c,), lambda ch: te.max(X[ch, b], axis=b), name="hi")
        return te.compute((c, n), lambda ch, i: (X[ch, i] - lo[ch]) / (hi[ch] - lo[ch] + 1e-9), name="Y")

    return make_task(
        pattern="minmax_normalise",
        tag=f"{c}x{n}",
        level=1,
        domain=D,
        ins=[In("X", (c, n))],
        outs=[Out("Y", (c, n))],
        te_fn=te_fn,
        ref=lambda x: (x - x.min(1, keepdims=True)) / (x.max(1, keepdims=True) - x.min(1, keepdims=True) + 1e-9),
        flops=4 * c * n,
        desc=f"per-channel min-max normalisation to [0, 1], {c}x{n} ({src})",
    )


def soft_limiter(c: int, n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        r = te.reduce_axis((0, n), "i")
        ss = te.compute((c,), lambda ch: te.sum(X[ch, r] * X[ch, r], axis=r), name="ss")
        g = te.compute((c,), lambda ch: 0.3 * te.rsqrt(ss[ch] * (1.0 / n) + 1e-9), name="gain")
        return te.compute((c, n), lambda ch, i: te.tanh(X[ch, i] * g[ch]), name="Y")

    def ref(x):
        g = 0.3 / np.sqrt((x * x).mean(1, keepdims=True) + 1e-9)
        return np.tanh(x * g)

    return make_task(
        pattern="rms_agc_soft_limiter",
        tag=f"{c}x{n}",
        level=2,
        domain=D,
        ins=[In("X", (c, n))],
        outs=[Out("Y", (c, n))],
        te_fn=te_fn,
        ref=ref,
        flops=5 * c * n,
        desc=f"automatic gain control to RMS 0.3 + tanh soft limiter per channel, {c}x{n} ({src})",
    )


def tasks() -> list[Task]:
    return [
        autocorr(1024, 512, "pitch/VAD autocorrelation 64 ms"),
        autocorr(512, 160, "LPC/pitch 32 ms @16 kHz"),
        autocorr(1024, 256, "fp16 pitch tracker", "float16"),
        autocorr(480, 128, "fp16 VAD", "float16"),
        autocorr(1024, 400, "YIN-style pitch search", normalised=True),
        autocorr(480, 160, "LPC order search", normalised=True),
        xcorr(1024, 512, "GCC time delay, 2 mics"),
        xcorr(256, 1024, "echo-path delay search"),
        linear_resample(16000, 11025, "16 -> 11.025 kHz"),
        linear_resample(4410, 1600, "44.1 -> 16 kHz block"),
        ncc(4096, 256, "template matching (ECG beat)"),
        ncc(2048, 128, "sonar ping detection"),
        filterbank_energy(8, 64, 512, "8-band audio analyser"),
        filterbank_energy(4, 128, 256, "EEG band powers"),
        peak_pick(4, 2048, "PPG/ECG peak detection"),
        peak_pick(1, 8192, "envelope onset picking"),
        minmax_norm(8, 1024, "sensor channels"),
        minmax_norm(64, 128, "feature windows"),
        soft_limiter(2, 4096, "stereo AGC"),
        soft_limiter(8, 1024, "mic array AGC"),
    ]
