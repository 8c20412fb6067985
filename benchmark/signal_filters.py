"""Signal-processing filters (CMSIS-DSP-style block processing): FIR (fp32/fp16/q15), decimating and
interpolating FIR, polyphase resampling, moving average, median, and recurrences (IIR biquad cascade,
DC blocker, envelope follower, prefix sum) written as TVMScript scans.
Inputs carry taps-1 samples of history before the block, as arm_fir_f32's state buffer does.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task
from ._lib.reduce import scan_task

D = "signal-processing"


def _lowpass(taps: int, cutoff: float = 0.2) -> np.ndarray:
    n = np.arange(taps) - (taps - 1) / 2
    return (np.sinc(2 * cutoff * n) * np.hamming(taps) * 2 * cutoff).astype(np.float32)


def fir(n: int, taps: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(X, H):
        from tvm import te

        r = te.reduce_axis((0, taps), "j")
        if dtype == "int16":  # q15: int64 accumulate, round, >> 15, saturate
            acc = te.compute(
                (n,), lambda i: te.sum(X[i + taps - 1 - r].astype("int64") * H[r].astype("int64"), axis=r), name="acc"
            )
            return te.compute(
                (n,),
                lambda i: te.max(
                    te.min((acc[i] + (1 << 14)) >> 15, te.const(32767, "int64")), te.const(-32768, "int64")
                ).astype("int16"),
                name="Y",
            )
        S = te.compute(
            (n,),
            lambda i: te.sum(X[i + taps - 1 - r].astype("float32") * H[r].astype("float32"), axis=r),
            name="Y" if dtype == "float32" else "acc",
        )
        return S if dtype == "float32" else te.compute((n,), lambda i: S[i].astype(dtype), name="Y")

    def ref(x, h):
        if dtype == "int16":
            acc = np.convolve(x.astype(np.int64), h.astype(np.int64), mode="valid")
            return np.clip((acc + (1 << 14)) >> 15, -32768, 32767).astype(np.int16)
        return np.convolve(x, h, mode="valid")

    q15 = dtype == "int16"
    return make_task(
        pattern="fir",
        tag=f"{n}x{taps}",
        level=1,
        domain=D,
        ins=[
            In("X", (n + taps - 1,), dtype, low=-8192 if q15 else None, high=8192 if q15 else None),
            In("H", (taps,), dtype, low=-4096 if q15 else None, high=4096 if q15 else None),
        ],
        outs=[Out("Y", (n,), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=2 * n * taps,
        desc=f"FIR {taps} taps on a {n}-sample block ({src}"
        + ("; q15 fixed point" if q15 else "")
        + ("; fp16 with fp32 accumulation" if dtype == "float16" else "")
        + ")",
    )


def fir_decimate(n_out: int, taps: int, m: int, src: str) -> Task:
    n_in = n_out * m + taps - 1

    def te_fn(X, H):
        from tvm import te

        r = te.reduce_axis((0, taps), "j")
        return te.compute((n_out,), lambda i: te.sum(X[i * m + taps - 1 - r] * H[r], axis=r), name="Y")

    return make_task(
        pattern=f"fir_decimate_m{m}",
        tag=f"{n_out}x{taps}",
        level=1,
        domain=D,
        ins=[In("X", (n_in,)), In("H", (taps,), fixed=lambda: _lowpass(taps, 0.5 / m))],
        outs=[Out("Y", (n_out,))],
        te_fn=te_fn,
        ref=lambda x, h: np.convolve(x, h, mode="valid")[::m][:n_out],
        flops=2 * n_out * taps,
        desc=f"decimating FIR (anti-alias {taps} taps, factor {m}), {n_out} outputs ({src})",
    )


def polyphase(n_out: int, taps: int, up: int, down: int, src: str) -> Task:
    t = taps // up  # taps per phase
    n_in = (n_out * down) // up + t

    def te_fn(X, H):
        from tvm import te, tirx

        r = te.reduce_axis((0, t), "j")
        ph = lambda i: tirx.indexmod(i * down, up)
        base = lambda i: tirx.indexdiv(i * down, up)
        return te.compute(
            (n_out,), lambda i: te.sum(H[ph(i) + r * up] * X[base(i) + t - 1 - r] * float(up), axis=r), name="Y"
        )

    def ref(x, h):
        i = np.arange(n_out)
        ph, base = (i * down) % up, (i * down) // up
        return up * sum(h[ph + j * up] * x[base + t - 1 - j] for j in range(t))

    kind = "fir_interpolate" if down == 1 else "polyphase_resample"
    return make_task(
        pattern=f"{kind}_{up}_{down}",
        tag=f"{n_out}x{taps}",
        level=1,
        domain=D,
        ins=[In("X", (n_in,)), In("H", (taps,), fixed=lambda: _lowpass(taps, 0.5 / max(up, down)))],
        outs=[Out("Y", (n_out,))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * n_out * t,
        desc=f"polyphase FIR resampling by {up}/{down} ({taps}-tap prototype), {n_out} outputs ({src})",
    )


def moving_average(c: int, n: int, w: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        r = te.reduce_axis((0, w), "j")
        S = te.compute((c, n), lambda ch, i: te.sum(X[ch, i + r], axis=r), name="win_sum")
        return te.compute((c, n), lambda ch, i: S[ch, i] * (1.0 / w), name="Y")

    def ref(x):
        cs = np.concatenate([np.zeros((c, 1)), np.cumsum(x.astype(np.float64), 1)], 1)
        return (cs[:, w:] - cs[:, :-w]) / w

    return make_task(
        pattern="moving_average",
        tag=f"{c}x{n}w{w}",
        level=1,
        domain=D,
        layout="[C,N]",
        ins=[In("X", (c, n + w - 1))],
        outs=[Out("Y", (c, n))],
        te_fn=te_fn,
        ref=ref,
        flops=c * n * w,
        desc=f"boxcar moving average (window {w}) over {c} channels x {n} samples ({src})",
    )


def median3(c: int, n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        def f(ch, i):
            a, b, d = X[ch, i], X[ch, i + 1], X[ch, i + 2]
            return te.max(te.min(a, b), te.min(te.max(a, b), d))

        return te.compute((c, n), f, name="Y")

    return make_task(
        pattern="median3_filter",
        tag=f"{c}x{n}",
        level=1,
        domain=D,
        layout="[C,N]",
        ins=[In("X", (c, n + 2))],
        outs=[Out("Y", (c, n))],
        te_fn=te_fn,
        ref=lambda x: np.median(np.stack([x[:, :-2], x[:, 1:-1], x[:, 2:]]), 0),
        flops=4 * c * n,
        desc=f"3-tap median filter (min/max network) on {c}x{n} ({src})",
    )


_scan_task = partial(scan_task, domain=D)


def prefix_sum(c: int, n: int, src: str) -> Task:
    return _scan_task(
        "cumulative_sum_scan",
        c,
        n,
        "Y[vc, vt] = X[vc, vt] + T.if_then_else(vt > 0, Y[vc, vt - 1], T.float32(0))",
        lambda x: np.cumsum(x.astype(np.float64), 1),
        c * n,
        f"inclusive prefix sum along time ({src})",
    )


def dc_blocker(c: int, n: int, src: str, a: float = 0.995) -> Task:
    body = (
        f"Y[vc, vt] = X[vc, vt] - T.if_then_else(vt > 0, X[vc, vt - 1], T.float32(0)) + T.float32({a}) * "
        "T.if_then_else(vt > 0, Y[vc, vt - 1], T.float32(0))"
    )

    def ref(x):
        from scipy.signal import lfilter  # scipy comes with xgboost-cpu; float64 recursion

        return lfilter([1.0, -1.0], [1.0, -a], x, axis=1)

    return _scan_task(
        "dc_blocker_iir",
        c,
        n,
        body,
        ref,
        3 * c * n,
        f"DC blocker y[n] = x[n] - x[n-1] + {a} y[n-1] (one-pole high-pass) ({src})",
    )


def envelope(c: int, n: int, src: str, a: float = 0.99) -> Task:
    body = (
        f"Y[vc, vt] = T.float32({a}) * T.if_then_else(vt > 0, Y[vc, vt - 1], T.float32(0)) + "
        f"T.float32({1 - a}) * T.fabs(X[vc, vt])"
    )

    def ref(x):
        from scipy.signal import lfilter

        return lfilter([1.0 - a], [1.0, -a], np.abs(x), axis=1)

    return _scan_task(
        "envelope_follower",
        c,
        n,
        body,
        ref,
        3 * c * n,
        f"envelope: full-wave rectify + one-pole smoother (a = {a}) ({src})",
    )


def biquad_cascade(c: int, n: int, stages: int, src: str) -> Task:
    rng = np.random.default_rng(stages)
    coefs = []
    for _ in range(stages):  # stable sections: poles inside the unit circle
        rad, th = rng.uniform(0.5, 0.9), rng.uniform(0.2, 2.5)
        coefs.append(
            (rng.uniform(0.2, 1.0), rng.uniform(-1, 1), rng.uniform(-0.5, 0.5), -2 * rad * np.cos(th), rad * rad)
        )
    lines, allocs = [], []
    for s, (b0, b1, b2, a1, a2) in enumerate(coefs):
        src_buf = "X" if s == 0 else f"Y{s - 1}"
        dst = "Y" if s == stages - 1 else f"Y{s}"
        allocs += [
            f'S1_{s} = T.sblock_alloc_buffer(({c}, {n}), "float32")',
            f'S2_{s} = T.sblock_alloc_buffer(({c}, {n}), "float32")',
        ]
        if dst != "Y":
            allocs.append(f'{dst} = T.sblock_alloc_buffer(({c}, {n}), "float32")')
        prev = lambda b: f"T.if_then_else(vt > 0, {b}[vc, vt - 1], T.float32(0))"
        lines += [
            f"{dst}[vc, vt] = T.float32({b0}) * {src_buf}[vc, vt] + {prev(f'S1_{s}')}",
            f"S1_{s}[vc, vt] = T.float32({b1}) * {src_buf}[vc, vt] - T.float32({a1}) * {dst}[vc, vt]"
            f" + {prev(f'S2_{s}')}",
            f"S2_{s}[vc, vt] = T.float32({b2}) * {src_buf}[vc, vt] - T.float32({a2}) * {dst}[vc, vt]",
        ]

    def ref(x):
        from scipy.signal import sosfilt  # float64 second-order sections (same transfer function)

        return sosfilt(np.array([[b0, b1, b2, 1.0, a1, a2] for b0, b1, b2, a1, a2 in coefs]), x, axis=1)

    return _scan_task(
        "biquad_cascade_df2t",
        c,
        n,
        "\n".join(lines),
        ref,
        9 * stages * c * n,
        f"{stages}-stage biquad cascade, transposed direct form II, one step per sample ({src})",
        allocs="\n".join(allocs),
        tag=f"s{stages}",
    )


def tasks() -> list[Task]:
    cm = "CMSIS-DSP arm_fir"
    return [
        fir(256, 32, cm + " 32 taps"),
        fir(1024, 129, "linear-phase 129-tap band-pass, 64 ms @16 kHz"),
        fir(256, 64, cm + "_f16", "float16"),
        fir(1024, 128, "fp16 audio EQ", "float16"),
        fir(256, 32, cm + "_q15", "int16"),
        fir(1024, 256, "q15 long FIR", "int16"),
        fir_decimate(320, 48, 3, "48 -> 16 kHz, 20 ms hop"),
        fir_decimate(512, 64, 3, "48 -> 16 kHz block"),
        fir_decimate(256, 32, 2, "32 -> 16 kHz"),
        fir_decimate(512, 16, 2, "half-band-ish 2x decimator"),
        polyphase(640, 64, 2, 1, "8 -> 16 kHz upsampling"),
        polyphase(1024, 96, 2, 1, "22.05 -> 44.1 kHz"),
        polyphase(320, 96, 2, 3, "24 -> 16 kHz polyphase"),
        polyphase(480, 144, 2, 3, "48 -> 32 kHz polyphase"),
        moving_average(8, 1024, 16, "8-channel sensor smoothing"),
        moving_average(3, 4096, 64, "IMU 3-axis"),
        median3(8, 1024, "impulse-noise removal"),
        median3(3, 4096, "IMU glitch filter"),
        prefix_sum(8, 1024, "integral image row / energy"),
        prefix_sum(1, 16000, "1 s running sum @16 kHz"),
        dc_blocker(2, 4096, "stereo audio DC removal"),
        dc_blocker(8, 1024, "8-mic array front end"),
        envelope(4, 2048, "EMG/ECG envelope"),
        envelope(16, 512, "vibration channels"),
        biquad_cascade(2, 1024, 2, "stereo EQ 2 sections"),
        biquad_cascade(1, 2048, 4, "CMSIS arm_biquad_cascade_df2T 4 sections"),
    ]
