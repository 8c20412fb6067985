"""Speech enhancement / synthesis kernels (L1 + L2): magnitude spectral subtraction, overlap-add,
inverse STFT (inverse real DFT as a table matmul + synthesis window + overlap-add).
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task
from ._lib.spectral import hann, signal_length

D = "speech-audio"


def spectral_subtraction(frames: int, bins: int, src: str) -> Task:
    def te_fn(M, N):
        from tvm import te

        return te.compute((frames, bins), lambda t, k: te.max(M[t, k] - 2.0 * N[k], 0.05 * M[t, k]), name="Y")

    return make_task(
        pattern="spectral_subtraction",
        tag=f"{frames}x{bins}",
        level=1,
        domain=D,
        ins=[In("M", (frames, bins), dist="positive"), In("N", (bins,), low=0.0, high=0.5, dist="positive")],
        outs=[Out("Y", (frames, bins))],
        te_fn=te_fn,
        ref=lambda m, n: np.maximum(m - 2.0 * n, 0.05 * m),
        flops=3 * frames * bins,
        desc=f"magnitude spectral subtraction (over-subtraction 2, floor 0.05), {frames}x{bins} ({src})",
    )


def overlap_add(frames: int, win: int, hop: int, src: str) -> Task:
    n = signal_length(frames, win, hop)
    span = -(-win // hop)  # frames overlapping one output sample

    def te_fn(F):
        from tvm import te, tirx

        r = te.reduce_axis((0, span), "j")

        def f(i):
            fr = tirx.indexdiv(i, hop) - r
            off = i - fr * hop
            ok = tirx.all(fr >= 0, fr < frames, off < win)
            return te.sum(
                tirx.if_then_else(
                    ok, F[tirx.max(tirx.min(fr, frames - 1), 0), tirx.max(tirx.min(off, win - 1), 0)], 0.0
                ),
                axis=r,
            )

        return te.compute((n,), f, name="Y")

    def ref(fr):
        y = np.zeros(n, np.float32)
        for t in range(frames):
            y[t * hop : t * hop + win] += fr[t]
        return y

    return make_task(
        pattern="overlap_add",
        tag=f"{frames}x{win}h{hop}",
        level=1,
        domain=D,
        ins=[In("F", (frames, win))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=ref,
        flops=frames * win,
        desc=f"overlap-add synthesis of {frames} frames ({win} win, {hop} hop) ({src})",
    )


def istft(frames: int, nfft: int, hop: int, src: str) -> Task:
    nb, n = nfft // 2 + 1, signal_length(frames, nfft, hop)
    k = np.arange(nb)
    wk = np.where((k == 0) | (k == nfft // 2), 1.0, 2.0) / nfft
    ang = 2 * np.pi * np.outer(k, np.arange(nfft)) / nfft
    ic, isn = (wk[:, None] * np.cos(ang)).astype(np.float32), (-wk[:, None] * np.sin(ang)).astype(np.float32)
    w = hann(nfft)

    def te_fn(R, J, C, S, W):
        from tvm import te, tirx

        a, b = te.reduce_axis((0, nb), "a"), te.reduce_axis((0, nb), "b")
        fr = te.compute((frames, nfft), lambda t, i: te.sum(R[t, a] * C[a, i], axis=a), name="tre")
        fi = te.compute((frames, nfft), lambda t, i: te.sum(J[t, b] * S[b, i], axis=b), name="tim")
        wf = te.compute((frames, nfft), lambda t, i: (fr[t, i] + fi[t, i]) * W[i], name="wframes")
        span = -(-nfft // hop)
        r = te.reduce_axis((0, span), "j")

        def f(i):
            t = tirx.indexdiv(i, hop) - r
            off = i - t * hop
            ok = tirx.all(t >= 0, t < frames, off < nfft)
            return te.sum(
                tirx.if_then_else(
                    ok, wf[tirx.max(tirx.min(t, frames - 1), 0), tirx.max(tirx.min(off, nfft - 1), 0)], 0.0
                ),
                axis=r,
            )

        return te.compute((n,), f, name="Y")

    def ref(re, im, c, s, win):
        fr = (re @ c + im @ s) * win
        y = np.zeros(n, np.float32)
        for t in range(frames):
            y[t * hop : t * hop + nfft] += fr[t]
        return y

    return make_task(
        pattern="istft_overlap_add",
        tag=f"{frames}x{nfft}h{hop}",
        level=2,
        domain=D,
        ins=[
            In("Re", (frames, nb)),
            In("Im", (frames, nb)),
            In("C", (nb, nfft), fixed=lambda: ic),
            In("S", (nb, nfft), fixed=lambda: isn),
            In("W", (nfft,), fixed=lambda: w),
        ],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * frames * nb * nfft + 2 * frames * nfft,
        desc=f"inverse real DFT (table matmul) + synthesis window + overlap-add, {frames} frames ({src})",
    )


def tasks() -> list[Task]:
    return [
        spectral_subtraction(49, 257, "single-mic noise suppression"),
        spectral_subtraction(100, 129, "8 kHz telephony"),
        overlap_add(49, 480, 320, "KWS-rate synthesis"),
        overlap_add(32, 512, 128, "75% overlap enhancement"),
        istft(16, 256, 128, "speech enhancement 16 ms frames"),
        istft(8, 512, 256, "enhancement 32 ms frames"),
    ]
