"""Spectral tables (NumPy) and TE blocks: DFT bases for framed real/complex DFTs as matmuls, Hann
window, HTK mel filterbank, DCT-II (MFCC), framing with hop. Tables are passed to kernels as fixed
inputs, the way CMSIS-DSP and TFLite-Micro front ends keep them in flash.
"""

from __future__ import annotations

import numpy as np


def hann(n: int) -> np.ndarray:
    """Periodic Hann window (librosa/TF default for STFT)."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).astype(np.float32)


def rdft_basis(n_fft: int, win: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """[win, n_fft//2+1] cosine and (negative) sine bases for X[k] = sum_n x[n] e^{-2πikn/N}."""
    win = win or n_fft
    k = np.arange(n_fft // 2 + 1)
    ang = 2 * np.pi * np.outer(np.arange(win), k) / n_fft
    return np.cos(ang).astype(np.float32), (-np.sin(ang)).astype(np.float32)


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)


def mel_filterbank(n_fft: int, n_mels: int, sr: int, fmin: float, fmax: float) -> np.ndarray:
    """[n_fft//2+1, n_mels] triangular HTK filterbank (columns overlap half-way, as in TF/librosa htk)."""
    bins = np.linspace(0, sr / 2, n_fft // 2 + 1)
    mels = np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    lo, c, hi = hz[:-2], hz[1:-1], hz[2:]
    up = (bins[:, None] - lo[None, :]) / (c - lo)[None, :]
    down = (hi[None, :] - bins[:, None]) / (hi - c)[None, :]
    return np.maximum(0.0, np.minimum(up, down)).astype(np.float32)


def dct2_matrix(n_in: int, n_out: int) -> np.ndarray:
    """[n_in, n_out] orthonormal DCT-II basis (MFCC = log-mel @ D)."""
    n = np.arange(n_in)[:, None]
    k = np.arange(n_out)[None, :]
    d = np.cos(np.pi / n_in * (n + 0.5) * k) * np.sqrt(2.0 / n_in)
    d[:, 0] *= 1 / np.sqrt(2.0)
    return d.astype(np.float32)


def signal_length(frames: int, win: int, hop: int) -> int:
    """Samples spanned by `frames` frames of `win` samples taken every `hop`."""
    return (frames - 1) * hop + win


def frames_np(x: np.ndarray, win: int, hop: int, n_frames: int) -> np.ndarray:
    idx = np.arange(n_frames)[:, None] * hop + np.arange(win)[None, :]
    return x[..., idx]


def framed_dft(X, W, Cb, Sb, *, hop: int, n_frames: int, name: str = "S", names: tuple[str, str] | None = None):
    """Framed, windowed real DFT: returns (Re, Im) [n_frames, bins]; frame f starts at f*hop."""
    from tvm import te

    win, nb = (int(v) for v in Cb.shape)
    n = te.reduce_axis((0, win), name="n")
    n2 = te.reduce_axis((0, win), name="n2")
    F = te.compute((n_frames, win), lambda f, i: X[f * hop + i] * W[i], name=name + "_frames")
    re = te.compute(
        (n_frames, nb), lambda f, k: te.sum(F[f, n] * Cb[n, k], axis=n), name=names[0] if names else name + "_re"
    )
    im = te.compute(
        (n_frames, nb), lambda f, k: te.sum(F[f, n2] * Sb[n2, k], axis=n2), name=names[1] if names else name + "_im"
    )
    return re, im


def framed_dft_np(x, w, cb, sb, hop: int, n_frames: int):
    f = frames_np(x, w.shape[0], hop, n_frames) * w
    return f @ cb, f @ sb
