"""Signal transforms (L1 + L2): complex DFT and selected-bin DFT power with in-kernel twiddles (an FFT /
Goertzel is a valid rewrite), 2-level Haar wavelet, Welch PSD over DFT-table frames, spectral centroid
and flux.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task
from ._lib.spectral import frames_np, hann, rdft_basis

D = "signal-processing"


def cdft(batch: int, n: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(Xr, Xi):
        from tvm import te, tirx

        ang = lambda k, m: tirx.indexmod(k * m, n).astype("float32") * (-2 * np.pi / n)
        f = lambda v: v.astype("float32") if dtype != "float32" else v
        a, b = te.reduce_axis((0, n), "a"), te.reduce_axis((0, n), "b")
        re = te.compute(
            (batch, n),
            lambda t, k: te.sum(f(Xr[t, a]) * te.cos(ang(k, a)) - f(Xi[t, a]) * te.sin(ang(k, a)), axis=a),
            name="re",
        )
        im = te.compute(
            (batch, n),
            lambda t, k: te.sum(f(Xr[t, b]) * te.sin(ang(k, b)) + f(Xi[t, b]) * te.cos(ang(k, b)), axis=b),
            name="im",
        )
        return (
            te.compute((batch, n), lambda t, k: re[t, k].astype(dtype), name="Yr"),
            te.compute((batch, n), lambda t, k: im[t, k].astype(dtype), name="Yi"),
        )

    def ref(xr, xi):
        y = np.fft.fft(xr + 1j * xi, axis=-1)
        return y.real, y.imag

    return make_task(
        pattern="complex_dft",
        tag=f"{batch}x{n}",
        level=1,
        domain=D,
        ins=[In("Xr", (batch, n), dtype), In("Xi", (batch, n), dtype)],
        outs=[Out("Yr", (batch, n), dtype), Out("Yi", (batch, n), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=8 * batch * n * n,
        rtol=1e-3 if dtype == "float32" else None,
        desc=f"complex DFT (twiddles computed in-kernel; an FFT is a valid rewrite), {batch} x {n}-pt ({src}; "
        "rtol 1e-3: in-kernel cos/sin vs numpy FFT rounding)",
    )


def goertzel(frames: int, n: int, bins: tuple[int, ...], src: str) -> Task:
    nb = len(bins)

    def te_fn(X, K):
        from tvm import te, tirx

        a, b = te.reduce_axis((0, n), "a"), te.reduce_axis((0, n), "b")
        ang = lambda j, m: tirx.indexmod(K[j] * m, n).astype("float32") * (2 * np.pi / n)
        re = te.compute((frames, nb), lambda t, j: te.sum(X[t, a] * te.cos(ang(j, a)), axis=a), name="re")
        im = te.compute((frames, nb), lambda t, j: te.sum(X[t, b] * te.sin(ang(j, b)), axis=b), name="im")
        return te.compute((frames, nb), lambda t, j: re[t, j] * re[t, j] + im[t, j] * im[t, j], name="Y")

    kb = np.array(bins, np.int32)
    return make_task(
        pattern="dft_bins_power",
        tag=f"{frames}x{n}x{nb}",
        level=1,
        domain=D,
        ins=[In("X", (frames, n)), In("K", (nb,), "int32", fixed=lambda: kb)],
        outs=[Out("Y", (frames, nb))],
        te_fn=te_fn,
        ref=lambda x, k: np.abs(np.fft.rfft(x, axis=-1)[:, k]) ** 2,
        flops=4 * frames * n * nb,
        rtol=1e-3,
        desc=f"power at {nb} selected DFT bins (Goertzel/DTMF detector), {frames} frames of {n} "
        f"({src}; rtol 1e-3 for in-kernel twiddles)",
    )


def haar_dwt(c: int, n: int, src: str) -> Task:
    s = float(1 / np.sqrt(2))

    def te_fn(X):
        from tvm import te

        A1 = te.compute((c, n // 2), lambda ch, i: (X[ch, 2 * i] + X[ch, 2 * i + 1]) * s, name="A1")
        D1 = te.compute((c, n // 2), lambda ch, i: (X[ch, 2 * i] - X[ch, 2 * i + 1]) * s, name="D1")
        A2 = te.compute((c, n // 4), lambda ch, i: (A1[ch, 2 * i] + A1[ch, 2 * i + 1]) * s, name="A2")
        D2 = te.compute((c, n // 4), lambda ch, i: (A1[ch, 2 * i] - A1[ch, 2 * i + 1]) * s, name="D2")
        return A2, D2, D1

    def ref(x):
        a1, d1 = (x[:, 0::2] + x[:, 1::2]) * s, (x[:, 0::2] - x[:, 1::2]) * s
        return (a1[:, 0::2] + a1[:, 1::2]) * s, (a1[:, 0::2] - a1[:, 1::2]) * s, d1

    return make_task(
        pattern="haar_dwt_2level",
        tag=f"{c}x{n}",
        level=1,
        domain=D,
        ins=[In("X", (c, n))],
        outs=[Out("A2", (c, n // 4)), Out("D2", (c, n // 4)), Out("D1", (c, n // 2))],
        te_fn=te_fn,
        ref=ref,
        flops=3 * c * n,
        desc=f"2-level Haar wavelet transform, {c} x {n} ({src})",
    )


def spectral_feature(kind: str, frames: int, bins: int, src: str) -> Task:
    def te_fn(P):
        from tvm import te

        if kind == "centroid":
            a, b = te.reduce_axis((0, bins), "a"), te.reduce_axis((0, bins), "b")
            num = te.compute((frames,), lambda t: te.sum(a.astype("float32") * P[t, a], axis=a), name="num")
            den = te.compute((frames,), lambda t: te.sum(P[t, b], axis=b), name="den")
            return te.compute((frames,), lambda t: num[t] / (den[t] + 1e-9), name="Y")
        r = te.reduce_axis((0, bins), "k")
        return te.compute((frames - 1,), lambda t: te.sum(te.max(P[t + 1, r] - P[t, r], 0.0), axis=r), name="Y")

    if kind == "centroid":
        ref = lambda p: (p * np.arange(bins)).sum(1) / (p.sum(1) + 1e-9)
        outs = [Out("Y", (frames,))]
    else:
        ref = lambda p: np.maximum(p[1:] - p[:-1], 0).sum(1)
        outs = [Out("Y", (frames - 1,))]
    return make_task(
        pattern=f"spectral_{kind}",
        tag=f"{frames}x{bins}",
        level=1,
        domain=D,
        ins=[In("P", (frames, bins), dist="positive")],
        outs=outs,
        te_fn=te_fn,
        ref=ref,
        flops=3 * frames * bins,
        desc=f"spectral {kind} per frame of a {frames}x{bins} magnitude spectrogram ({src})",
    )


def welch_psd(frames: int, nfft: int, hop: int, src: str) -> Task:
    nb, n = nfft // 2 + 1, (frames - 1) * hop + nfft
    cb, sb = rdft_basis(nfft)

    def te_fn(X, W, C, S):
        from tvm import te

        from ._lib.spectral import framed_dft

        re, im = framed_dft(X, W, C, S, hop=hop, n_frames=frames)
        t = te.reduce_axis((0, frames), "t")
        P = te.compute((nb,), lambda k: te.sum(re[t, k] * re[t, k] + im[t, k] * im[t, k], axis=t), name="psum")
        return te.compute((nb,), lambda k: P[k] * (1.0 / frames), name="Y")

    def ref(x, w, c, s):
        f = frames_np(x, nfft, hop, frames) * w
        return ((f @ c) ** 2 + (f @ s) ** 2).mean(0)

    return make_task(
        pattern="welch_psd",
        tag=f"{frames}x{nfft}",
        level=2,
        domain=D,
        ins=[
            In("X", (n,)),
            In("W", (nfft,), fixed=lambda: hann(nfft)),
            In("C", (nfft, nb), fixed=lambda: cb),
            In("S", (nfft, nb), fixed=lambda: sb),
        ],
        outs=[Out("Y", (nb,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * frames * nb * nfft + 3 * frames * nb,
        desc=f"Welch PSD: {frames} Hann frames, {nfft}-pt DFT table, power averaged ({src})",
    )


def tasks() -> list[Task]:
    return [
        cdft(16, 64, "arm_cfft_f32 64-pt x16"),
        cdft(4, 256, "arm_cfft_f32 256-pt x4"),
        cdft(16, 64, "fp16 64-pt", "float16"),
        cdft(8, 128, "fp16 128-pt", "float16"),
        goertzel(50, 205, (18, 20, 22, 24, 31, 34, 38, 42), "DTMF 8 tones @8 kHz"),
        goertzel(25, 256, (8, 16, 32, 64), "tone detector"),
        haar_dwt(8, 1024, "ECG denoising"),
        haar_dwt(3, 4096, "vibration wavelet features"),
        spectral_feature("centroid", 49, 257, "KWS spectrogram"),
        spectral_feature("centroid", 100, 513, "music/audio tagging"),
        spectral_feature("flux", 49, 257, "onset detection"),
        spectral_feature("flux", 100, 513, "beat tracking"),
        welch_psd(7, 256, 128, "vibration PSD 1024 samples"),
        welch_psd(3, 512, 256, "audio noise floor"),
    ]
