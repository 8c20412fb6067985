"""Speech frame-level features and pooling (L1 + L2): CMVN, VAD frame energy, PCEN (a scan over time),
zero-crossing rate, x-vector statistics pooling, attentive pooling.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task
from ._lib.reduce import scan_script, softmax_np
from ._lib.spectral import frames_np, signal_length

D = "speech-audio"


def cmvn(frames: int, feats: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        r1, r2 = te.reduce_axis((0, frames), "t1"), te.reduce_axis((0, frames), "t2")
        tot = te.compute((feats,), lambda f: te.sum(X[r1, f], axis=r1), name="tot")
        mu = te.compute((feats,), lambda f: tot[f] * (1.0 / frames), name="mu")
        ss = te.compute((feats,), lambda f: te.sum((X[r2, f] - mu[f]) * (X[r2, f] - mu[f]), axis=r2), name="ss")
        return te.compute(
            (frames, feats), lambda t, f: (X[t, f] - mu[f]) * te.rsqrt(ss[f] * (1.0 / frames) + 1e-8), name="Y"
        )

    return make_task(
        pattern="cmvn_utterance",
        tag=f"{frames}x{feats}",
        level=1,
        domain=D,
        ins=[In("X", (frames, feats))],
        outs=[Out("Y", (frames, feats))],
        te_fn=te_fn,
        ref=lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-8),
        flops=6 * frames * feats,
        desc=f"per-utterance cepstral mean/variance normalisation over time, {frames}x{feats} ({src})",
    )


def vad_energy(frames: int, win: int, hop: int, src: str) -> Task:
    n = signal_length(frames, win, hop)

    def te_fn(X):
        from tvm import te

        r = te.reduce_axis((0, win), "i")
        e = te.compute((frames,), lambda f: te.sum(X[f * hop + r] * X[f * hop + r], axis=r), name="energy")
        return te.compute((frames,), lambda f: 10.0 * te.log10(e[f] * (1.0 / win) + 1e-10), name="Y")

    return make_task(
        pattern="vad_frame_energy_db",
        tag=f"{frames}x{win}h{hop}",
        level=1,
        domain=D,
        ins=[In("X", (n,))],
        outs=[Out("Y", (frames,))],
        te_fn=te_fn,
        ref=lambda x: 10 * np.log10((frames_np(x, win, hop, frames) ** 2).mean(1) + 1e-10),
        flops=2 * frames * win,
        desc=f"per-frame log energy (dB) for VAD, {frames} frames of {win} ({src})",
    )


def pcen(bands: int, frames: int, src: str) -> Task:
    s, alpha, delta, r, eps = 0.025, 0.98, 2.0, 0.5, 1e-6
    gain = f"E[vc, vt] / T.pow(T.float32({eps}) + M[vc, vt], T.float32({alpha}))"  # AGC by the smoothed energy
    script = scan_script(
        shape=(bands, frames),
        params=f'E: T.Buffer(({bands}, {frames}), "float32"), Y: T.Buffer(({bands}, {frames}), "float32")',
        allocs=f'M = T.sblock_alloc_buffer(({bands}, {frames}), "float32")',
        body=f"M[vc, vt] = T.float32({1 - s}) * T.if_then_else(vt > 0, M[vc, vt - 1], E[vc, 0])"
        f" + T.float32({s}) * E[vc, vt]\n"
        f"Y[vc, vt] = T.pow({gain} + T.float32({delta}), T.float32({r})) - T.float32({delta**r})",
    )

    def ref(e):
        m = np.empty_like(e)
        prev = e[:, 0]
        for t in range(frames):
            prev = (1 - s) * prev + s * e[:, t]
            m[:, t] = prev
        return (e / (eps + m) ** alpha + delta) ** r - delta**r

    return make_task(
        pattern="pcen",
        tag=f"{bands}x{frames}",
        level=1,
        domain=D,
        layout="[bands,time]",
        ins=[In("E", (bands, frames), dist="positive")],
        outs=[Out("Y", (bands, frames))],
        te_fn=None,
        script=script,
        ref=ref,
        flops=8 * bands * frames,
        desc=f"per-channel energy normalisation (IIR smoother over time = scan), {bands} bands ({src})",
    )


def stats_pooling(frames: int, ch: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te, tirx

        r1, r2 = te.reduce_axis((0, frames), "t1"), te.reduce_axis((0, frames), "t2")
        tot = te.compute((ch,), lambda c: te.sum(X[r1, c], axis=r1), name="tot")
        mu = te.compute((ch,), lambda c: tot[c] * (1.0 / frames), name="mu")
        ss = te.compute((ch,), lambda c: te.sum((X[r2, c] - mu[c]) * (X[r2, c] - mu[c]), axis=r2), name="ss")
        return te.compute(
            (2 * ch,),
            lambda j: tirx.Select(
                j < ch, mu[tirx.min(j, ch - 1)], te.sqrt(ss[tirx.max(j - ch, 0)] * (1.0 / frames) + 1e-6)
            ),
            name="Y",
        )

    return make_task(
        pattern="stats_pooling_mean_std",
        tag=f"{frames}x{ch}",
        level=1,
        domain=D,
        ins=[In("X", (frames, ch))],
        outs=[Out("Y", (2 * ch,))],
        te_fn=te_fn,
        ref=lambda x: np.concatenate([x.mean(0), np.sqrt(x.var(0) + 1e-6)]),
        flops=4 * frames * ch,
        desc=f"x-vector statistics pooling: [mean, std] over {frames} frames of {ch} ({src})",
    )


def attention_pool(frames: int, ch: int, src: str) -> Task:
    def te_fn(X, w):
        from tvm import te

        from ._lib.reduce import softmax_lastdim

        r = te.reduce_axis((0, ch), "c")
        sc = te.compute((1, frames), lambda _, t: te.sum(te.tanh(X[t, r]) * w[r], axis=r), name="score")
        P = softmax_lastdim(sc, name="P")
        rt = te.reduce_axis((0, frames), "t")
        return te.compute((ch,), lambda c: te.sum(P[0, rt] * X[rt, c], axis=rt), name="Y")

    return make_task(
        pattern="attentive_pooling",
        tag=f"{frames}x{ch}",
        level=2,
        domain=D,
        ins=[In("X", (frames, ch)), In("w", (ch,))],
        outs=[Out("Y", (ch,))],
        te_fn=te_fn,
        ref=lambda x, w: softmax_np(np.tanh(x) @ w) @ x,
        flops=4 * frames * ch,
        desc=f"attention pooling over time (scores wᵀtanh(x), softmax, weighted sum), {frames}x{ch} ({src})",
    )


def _zcr_np(x: np.ndarray) -> np.ndarray:
    z = x - x.mean(1, keepdims=True)
    return (z[:, 1:] * z[:, :-1] < 0).sum(1) / (x.shape[1] - 1)


def zero_crossing_rate(frames: int, win: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        r, m = te.reduce_axis((1, win), "i"), te.reduce_axis((0, win), "m")
        tot = te.compute((frames,), lambda f: te.sum(X[f, m], axis=m), name="tot")
        Z = te.compute((frames, win), lambda f, i: X[f, i] - tot[f] * (1.0 / win), name="dc_removed")
        cnt = te.compute(
            (frames,),
            lambda f: te.sum(te.if_then_else(Z[f, r] * Z[f, r - 1] < 0.0, 1.0, 0.0), axis=r),
            name="crossings",
        )
        return te.compute((frames,), lambda f: cnt[f] * (1.0 / (win - 1)), name="Y")

    return make_task(
        pattern="zero_crossing_rate",
        tag=f"{frames}x{win}",
        level=1,
        domain=D,
        ins=[In("X", (frames, win))],
        outs=[Out("Y", (frames,))],
        te_fn=te_fn,
        ref=_zcr_np,
        flops=4 * frames * win,
        desc=f"zero-crossing rate of the DC-removed frame, {frames} frames of {win} samples ({src})",
    )


def tasks() -> list[Task]:
    kws, wh = "DS-CNN KWS front end", "Whisper-tiny front end"
    return [
        cmvn(49, 40, kws),
        cmvn(300, 80, wh + " 3 s of 80 mels"),
        vad_energy(49, 480, 320, "WebRTC-style VAD, 30 ms / 20 ms"),
        vad_energy(100, 400, 160, "10 ms hop VAD"),
        pcen(40, 49, kws + " PCEN"),
        pcen(64, 100, "far-field KWS PCEN"),
        stats_pooling(200, 512, "x-vector speaker embedding"),
        stats_pooling(98, 64, "KWS speaker verification"),
        attention_pool(200, 256, "ECAPA-lite attentive pooling"),
        attention_pool(49, 64, "KWS attention head"),
        zero_crossing_rate(49, 480, kws + " VAD feature"),
        zero_crossing_rate(100, 400, "10 ms hop VAD"),
    ]
