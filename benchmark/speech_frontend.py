"""Speech front ends (L1 + L2): pre-emphasis, framing/windowing, STFT as a DFT matmul, power and
magnitude spectra, mel filterbank, log-mel, MFCC (DCT-II), deltas, frame stacking.
Shapes: KWS (16 kHz, 480-sample window, 320 hop, FFT 512, 40 mels, 10 MFCCs: 49 frames) and the
MLPerf Tiny AD front end (FFT 1024, hop 512, 128 mels, 5 stacked frames).
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, gemm_flops, make_task, matmul
from ._lib.spectral import (
    dct2_matrix,
    framed_dft,
    framed_dft_np,
    frames_np,
    hann,
    mel_filterbank,
    rdft_basis,
    signal_length,
)

D = "speech-audio"
KWS = dict(win=480, hop=320, n_fft=512, n_mels=40, sr=16000, fmin=20.0, fmax=4000.0)
AD = dict(win=1024, hop=512, n_fft=1024, n_mels=128, sr=16000, fmin=0.0, fmax=8000.0)


def pre_emphasis(n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        return te.compute((n,), lambda i: X[i] - 0.97 * te.if_then_else(i > 0, X[i - 1], 0.0), name="Y")

    return make_task(
        pattern="pre_emphasis",
        tag=f"{n}",
        level=1,
        domain=D,
        ins=[In("X", (n,))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda x: x - 0.97 * np.concatenate([[0.0], x[:-1]]),
        flops=2 * n,
        desc=f"pre-emphasis y[n] = x[n] - 0.97 x[n-1] on {n} samples ({src})",
    )


def frame_window(frames: int, cfg: dict, src: str) -> Task:
    win, hop = cfg["win"], cfg["hop"]
    n = signal_length(frames, win, hop)

    def te_fn(X, W):
        from tvm import te

        return te.compute((frames, win), lambda f, i: X[f * hop + i] * W[i], name="Y")

    return make_task(
        pattern="frame_window",
        tag=f"{frames}x{win}h{hop}",
        level=1,
        domain=D,
        ins=[In("X", (n,)), In("W", (win,), fixed=lambda: hann(win))],
        outs=[Out("Y", (frames, win))],
        te_fn=te_fn,
        ref=lambda x, w: frames_np(x, win, hop, frames) * w,
        flops=frames * win,
        desc=f"overlapping frames ({win} win, {hop} hop) times a Hann window ({src})",
    )


def stft(frames: int, cfg: dict, src: str, power: bool = False) -> Task:
    win, hop, nfft = cfg["win"], cfg["hop"], cfg["n_fft"]
    n, nb = signal_length(frames, win, hop), nfft // 2 + 1
    cb, sb = rdft_basis(nfft, win)

    def te_fn(X, W, C, S):
        from tvm import te

        re, im = framed_dft(X, W, C, S, hop=hop, n_frames=frames, names=("Re", "Im"))
        if not power:
            return re, im
        return te.compute((frames, nb), lambda f, k: re[f, k] * re[f, k] + im[f, k] * im[f, k], name="P")

    def ref(x, w, c, s):
        re, im = framed_dft_np(x, w, c, s, hop, frames)
        return re * re + im * im if power else (re, im)

    outs = [Out("P", (frames, nb))] if power else [Out("Re", (frames, nb)), Out("Im", (frames, nb))]
    return make_task(
        pattern="stft_power" if power else "stft_frame_window_dft",
        tag=f"{frames}x{nfft}",
        level=2,
        domain=D,
        ins=[
            In("X", (n,)),
            In("W", (win,), fixed=lambda: hann(win)),
            In("C", (win, nb), fixed=lambda: cb),
            In("S", (win, nb), fixed=lambda: sb),
        ],
        outs=outs,
        te_fn=te_fn,
        ref=ref,
        flops=4 * frames * nb * win + (3 * frames * nb if power else 0),
        desc=f"STFT: frame + Hann + {nfft}-pt real DFT as matmul with a DFT table"
        f"{' + power' if power else ''}, {frames} frames ({src})",
    )


def power_spectrum(frames: int, bins: int, src: str, mag: bool = False) -> Task:
    def te_fn(R, J):
        from tvm import te

        sq = lambda f, k: R[f, k] * R[f, k] + J[f, k] * J[f, k]
        return te.compute((frames, bins), (lambda f, k: te.sqrt(sq(f, k))) if mag else sq, name="Y")

    ref = (lambda r, j: np.sqrt(r * r + j * j)) if mag else (lambda r, j: r * r + j * j)
    return make_task(
        pattern="magnitude_spectrum" if mag else "power_spectrum",
        tag=f"{frames}x{bins}",
        level=1,
        domain=D,
        ins=[In("Re", (frames, bins)), In("Im", (frames, bins))],
        outs=[Out("Y", (frames, bins))],
        te_fn=te_fn,
        ref=ref,
        flops=(4 if mag else 3) * frames * bins,
        desc=f"{'|X|' if mag else '|X|²'} of a {frames}x{bins} complex spectrogram ({src})",
    )


def mel(frames: int, cfg: dict, src: str, log: bool = False, dtype: str = "float32") -> Task:
    nb, nm = cfg["n_fft"] // 2 + 1, cfg["n_mels"]
    fb = mel_filterbank(cfg["n_fft"], nm, cfg["sr"], cfg["fmin"], cfg["fmax"])

    def te_fn(P, F):
        from tvm import te

        M = matmul(P, F, name="mel" if log else "Y")
        return te.compute((frames, nm), lambda i, j: te.log(M[i, j] + 1e-6), name="Y") if log else M

    ref = (lambda p, f: np.log(p @ f + 1e-6)) if log else (lambda p, f: p @ f)
    return make_task(
        pattern="log_mel" if log else "mel_filterbank",
        tag=f"{frames}x{nb}x{nm}",
        level=2 if log else 1,
        domain=D,
        ins=[In("P", (frames, nb), dtype, dist="positive"), In("F", (nb, nm), dtype, fixed=lambda: fb)],
        outs=[Out("Y", (frames, nm), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=gemm_flops(frames, nm, nb) + (frames * nm if log else 0),
        desc=f"{'log(' if log else ''}power spectrum · {nm}-band mel filterbank{')' if log else ''}, "
        f"{frames} frames ({src}{'; fp16 in, fp32 accumulation' if dtype == 'float16' else ''})",
    )


def mfcc(frames: int, cfg: dict, n_cep: int, src: str, from_power: bool) -> Task:
    nb, nm = cfg["n_fft"] // 2 + 1, cfg["n_mels"]
    fb = mel_filterbank(cfg["n_fft"], nm, cfg["sr"], cfg["fmin"], cfg["fmax"])
    dct = dct2_matrix(nm, n_cep)
    if not from_power:
        return make_task(
            pattern="dct2_mfcc",
            tag=f"{frames}x{nm}x{n_cep}",
            level=1,
            domain=D,
            ins=[In("L", (frames, nm)), In("Dm", (nm, n_cep), fixed=lambda: dct)],
            outs=[Out("Y", (frames, n_cep))],
            te_fn=lambda L, Dm: matmul(L, Dm),
            ref=lambda l, d: l @ d,
            flops=gemm_flops(frames, n_cep, nm),
            desc=f"DCT-II of {nm} log-mels -> {n_cep} MFCCs ({src})",
        )

    def te_fn(P, F, Dm):
        from tvm import te

        M = matmul(P, F, name="mel")
        L = te.compute((frames, nm), lambda i, j: te.log(M[i, j] + 1e-6), name="logmel")
        return matmul(L, Dm)

    return make_task(
        pattern="mfcc_from_power",
        tag=f"{frames}x{nb}x{n_cep}",
        level=2,
        domain=D,
        ins=[
            In("P", (frames, nb), dist="positive"),
            In("F", (nb, nm), fixed=lambda: fb),
            In("Dm", (nm, n_cep), fixed=lambda: dct),
        ],
        outs=[Out("Y", (frames, n_cep))],
        te_fn=te_fn,
        ref=lambda p, f, d: np.log(p @ f + 1e-6) @ d,
        flops=gemm_flops(frames, nm, nb) + gemm_flops(frames, n_cep, nm) + frames * nm,
        desc=f"MFCC: mel filterbank + log + DCT-II ({nm} mels -> {n_cep}), {frames} frames ({src})",
    )


def deltas(frames: int, feats: int, src: str, width: int = 2) -> Task:
    den = 2.0 * sum(i * i for i in range(1, width + 1))

    def te_fn(X):
        from tvm import te

        clip = lambda t: te.max(te.min(t, frames - 1), 0)
        return te.compute(
            (frames, feats),
            lambda t, f: (
                sum(float(i) * (X[clip(t + i), f] - X[clip(t - i), f]) for i in range(1, width + 1)) * (1.0 / den)
            ),
            name="Y",
        )

    def ref(x):
        p = np.pad(x, ((width, width), (0, 0)), mode="edge")
        return (
            sum(
                i * (p[width + i : width + i + frames] - p[width - i : width - i + frames]) for i in range(1, width + 1)
            )
            / den
        )

    return make_task(
        pattern="delta_features",
        tag=f"{frames}x{feats}",
        level=1,
        domain=D,
        ins=[In("X", (frames, feats))],
        outs=[Out("Y", (frames, feats))],
        te_fn=te_fn,
        ref=ref,
        flops=3 * width * frames * feats,
        desc=f"delta (regression over ±{width} frames, edge padded), {frames}x{feats} ({src})",
    )


def frame_stack(frames: int, feats: int, ctx: int, src: str) -> Task:
    out_t = frames - ctx + 1

    def te_fn(X):
        from tvm import te, tirx

        return te.compute(
            (out_t, ctx * feats), lambda t, j: X[t + tirx.indexdiv(j, feats), tirx.indexmod(j, feats)], name="Y"
        )

    return make_task(
        pattern="frame_stacking",
        tag=f"{frames}x{feats}c{ctx}",
        level=1,
        domain=D,
        ins=[In("X", (frames, feats))],
        outs=[Out("Y", (out_t, ctx * feats))],
        te_fn=te_fn,
        ref=lambda x: frames_np(x.T, ctx, 1, out_t).transpose(1, 2, 0).reshape(out_t, ctx * feats),
        flops=0,
        desc=f"stack {ctx} consecutive frames of {feats} features into {ctx * feats}-d vectors ({src})",
    )


def tasks() -> list[Task]:
    kws, ad, wh = "DS-CNN KWS front end", "MLPerf Tiny AD front end", "Whisper-tiny front end"
    return [
        pre_emphasis(16000, "KWS 1 s @16 kHz"),
        pre_emphasis(4096, "streaming 256 ms @16 kHz"),
        frame_window(49, KWS, kws),
        frame_window(5, AD, ad),
        stft(25, KWS, kws + " (0.5 s)"),
        stft(5, AD, ad + " (5-frame vector)"),
        stft(25, KWS, kws + " (0.5 s)", power=True),
        stft(3, AD, ad, power=True),
        power_spectrum(49, 257, kws),
        power_spectrum(5, 513, ad),
        power_spectrum(49, 257, kws, mag=True),
        power_spectrum(100, 201, wh + " (FFT 400)", mag=True),
        mel(49, KWS, kws),
        mel(5, AD, ad),
        mel(49, KWS, kws, dtype="float16"),
        mel(5, AD, ad, dtype="float16"),
        mel(49, KWS, kws, log=True),
        mel(5, AD, ad, log=True),
        mfcc(49, KWS, 10, kws, from_power=False),
        mfcc(98, dict(KWS, n_mels=40), 13, "ASR 13 MFCC, 2 s", from_power=False),
        mfcc(49, KWS, 10, kws, from_power=True),
        mfcc(20, dict(KWS, n_mels=32), 13, "wake word 32 mels", from_power=True),
        deltas(49, 10, kws + " MFCC deltas"),
        deltas(98, 13, "ASR MFCC deltas"),
        frame_stack(32, 128, 5, ad + " (640-d vectors)"),
        frame_stack(49, 40, 3, kws + " ±1 context"),
    ]
