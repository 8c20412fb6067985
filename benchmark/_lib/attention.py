"""Attention TE blocks: scaled scores QKᵀ (optional causal mask), softmax over keys, ·V; rotary
position embedding. Layout is head-major [H, S, D]; fp16 accumulates in fp32.
"""

from __future__ import annotations

import numpy as np

from .linalg import batch_matmul
from .reduce import softmax_lastdim, softmax_np

NEG = -1e9  # additive mask value: exp underflows to exactly 0 in fp32


def attention(Q, K, V, *, causal: bool = False, lengths=None, name: str = "Y"):
    """softmax(Q Kᵀ / sqrt(d) + mask) V per head. `lengths`: int32 [1] valid-key count (padding mask)."""
    from tvm import tirx

    h, s, d = (int(x) for x in Q.shape)
    S = batch_matmul(Q, K, trans_b=True, scale=1.0 / float(np.sqrt(d)), name=name + "_scores")
    mask = None
    if causal:
        mask = lambda hh, i, j: tirx.Select(
            j > i + (int(K.shape[1]) - s), tirx.const(NEG, "float32"), tirx.const(0.0, "float32")
        )
    elif lengths is not None:
        mask = lambda hh, i, j: tirx.Select(j >= lengths[0], tirx.const(NEG, "float32"), tirx.const(0.0, "float32"))
    P = softmax_lastdim(S, mask=mask, name=name + "_probs")
    return batch_matmul(P, V, name=name)


def attention_np(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False, length: int | None = None
) -> np.ndarray:
    d = q.shape[-1]
    s = np.einsum("hid,hjd->hij", q, k) / np.sqrt(d)
    sq, sk = s.shape[-2:]
    if causal:
        s = s + np.where(np.arange(sk)[None, :] > np.arange(sq)[:, None] + (sk - sq), NEG, 0.0)
    if length is not None:
        s = s + np.where(np.arange(sk) >= length, NEG, 0.0)
    return np.einsum("hij,hjd->hid", softmax_np(s), v)


def rotary(X, cos_t, sin_t, *, name: str = "Y"):
    """Rotary embedding (GPT-NeoX half-split): x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin."""
    from tvm import te, tirx

    h, s, d = (int(x) for x in X.shape)
    half = d // 2

    def f(hh, i, j):
        jj = tirx.indexmod(j, half)
        c, sn = cos_t[i, jj], sin_t[i, jj]
        first = X[hh, i, jj] * c - X[hh, i, jj + half] * sn
        second = X[hh, i, jj + half] * c + X[hh, i, jj] * sn
        return tirx.Select(j < half, first, second)

    return te.compute((h, s, d), f, name=name)


def rotary_np(x: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def rope_tables(seq: int, dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    inv = base ** (-np.arange(0, dim, 2) / dim)
    ang = np.arange(seq)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
