"""Speech model layers (L1 + L2): causal temporal depthwise conv1d (DS-TCN k 3/5/10/15), streaming
stateful conv, dilated TCN conv, Whisper-tiny conv1d front end, GRU/LSTM cell steps, Conformer pointwise conv + GLU.
Layout is [time, channels] (NTC, batch 1).
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import MCU_SCRATCH, In, Out, int8_gemm_scale, make_task, matmul, requant_np, requant_te

D = "speech-audio"


def _causal_dw_np(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    k, (t, c) = w.shape[0], x.shape
    p = np.concatenate([np.zeros((k - 1, c), x.dtype), x])
    return sum(p[j : j + t] * w[j] for j in range(k))


def causal_dwconv1d(t: int, c: int, k: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(X, W):
        from tvm import te

        r = te.reduce_axis((0, k), "j")
        acc = "int32" if dtype == "int8" else "float32"
        rd = lambda v: v.astype(acc) if v.dtype != acc else v
        S = te.compute(
            (t, c),
            lambda i, ch: te.sum(
                te.if_then_else(i + r >= k - 1, rd(X[i + r - (k - 1), ch]), te.const(0, acc)) * rd(W[r, ch]), axis=r
            ),
            name="Y" if dtype == "float32" else "acc",
        )
        if dtype == "float32":
            return S
        if dtype == "int8":
            return te.compute((t, c), lambda i, ch: requant_te(S[i, ch], mult, shift), name="Y")
        return te.compute((t, c), lambda i, ch: S[i, ch].astype(dtype), name="Y")

    mult, shift = int8_gemm_scale(k)
    if dtype == "int8":
        ref = lambda x, w: requant_np(_causal_dw_np(x.astype(np.int32), w.astype(np.int32)), mult, shift)
    else:
        ref = _causal_dw_np
    return make_task(
        pattern=f"causal_dwconv1d_k{k}",
        tag=f"{t}x{c}",
        level=1,
        domain=D,
        layout="[T,C]",
        ins=[In("X", (t, c), dtype), In("W", (k, c), dtype, low=-127 if dtype == "int8" else None)],
        outs=[Out("Y", (t, c), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=2 * t * c * k,
        scratch_budget=MCU_SCRATCH if dtype == "int8" else None,
        desc=f"causal temporal depthwise conv1d k{k}, {t} frames x {c} ch ({src})"
        + ("; int8 requant" if dtype == "int8" else ""),
    )


def streaming_dwconv1d(t: int, c: int, k: int, src: str) -> Task:
    def te_fn(X, S, W):
        from tvm import te, tirx

        r = te.reduce_axis((0, k), "j")
        full = te.compute(
            (t + k - 1, c),
            lambda i, ch: tirx.if_then_else(i < k - 1, S[tirx.min(i, k - 2), ch], X[tirx.max(i - (k - 1), 0), ch]),
            name="win",
        )
        Y = te.compute((t, c), lambda i, ch: te.sum(full[i + r, ch] * W[r, ch], axis=r), name="Y")
        NS = te.compute((k - 1, c), lambda i, ch: full[t + i, ch], name="S_out")
        return Y, NS

    def ref(x, s, w):
        full = np.concatenate([s, x])
        return sum(full[j : j + t] * w[j] for j in range(k)), full[t:]

    return make_task(
        pattern="streaming_dwconv1d_state",
        tag=f"{t}x{c}k{k}",
        level=1,
        domain=D,
        layout="[T,C]",
        ins=[In("X", (t, c)), In("S", (k - 1, c)), In("W", (k, c))],
        outs=[Out("Y", (t, c)), Out("S_out", (k - 1, c))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * t * c * k,
        scratch_budget=MCU_SCRATCH,
        desc=f"streaming causal DW conv1d k{k} with carried state (returns next state), {t}x{c} ({src})",
    )


def conv1d(t_out: int, cin: int, cout: int, k: int, stride: int, dil: int, src: str, gelu: bool = False) -> Task:
    pad = dil * (k - 1) // 2
    t_in = t_out * stride  # PyTorch Conv1d(padding=pad): L_out = (L_in + 2 pad - dil (k-1) - 1) // stride + 1

    def te_fn(X, W, B):
        from tvm import te

        r, rc = te.reduce_axis((0, k), "j"), te.reduce_axis((0, cin), "ci")

        def x_at(i, j, ci):
            pos = i * stride + j * dil - pad
            return te.if_then_else(te.all(pos >= 0, pos < t_in), X[te.max(te.min(pos, t_in - 1), 0), ci], 0.0)

        S = te.compute((t_out, cout), lambda i, co: te.sum(x_at(i, r, rc) * W[r, rc, co], axis=[r, rc]), name="conv")
        if gelu:
            return te.compute(
                (t_out, cout),
                lambda i, co: 0.5 * (S[i, co] + B[co]) * (1.0 + te.erf((S[i, co] + B[co]) * 0.7071067811865476)),
                name="Y",
            )
        return te.compute((t_out, cout), lambda i, co: S[i, co] + B[co], name="Y")

    def ref(x, w, b):
        p = np.pad(x, ((pad, pad + stride), (0, 0)))
        y = sum(p[j * dil : j * dil + (t_out - 1) * stride + 1 : stride][:t_out] @ w[j] for j in range(k)) + b
        if gelu:
            from scipy.special import erf  # scipy comes with xgboost-cpu

            return 0.5 * y * (1 + erf(y / np.sqrt(2)))
        return y

    name = f"conv1d_k{k}_s{stride}" + (f"_d{dil}" if dil > 1 else "") + ("_gelu" if gelu else "")
    return make_task(
        pattern=name,
        tag=f"{t_in}x{cin}x{cout}",
        level=2 if gelu else 1,
        domain=D,
        layout="[T,C] W[K,Cin,Cout]",
        ins=[In("X", (t_in, cin)), In("W", (k, cin, cout)), In("B", (cout,))],
        outs=[Out("Y", (t_out, cout))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * t_out * cout * cin * k,
        desc=f"conv1d k{k} stride {stride} dilation {dil} 'same', {cin}->{cout} ch, {t_in} frames"
        f"{' + bias + GELU' if gelu else ' + bias'} ({src})",
    )


def tcn_block(t: int, c: int, k: int, src: str) -> Task:
    def te_fn(X, Wd, Wp, Sc, Sh):
        from tvm import te

        r = te.reduce_axis((0, k), "j")
        DW = te.compute(
            (t, c),
            lambda i, ch: te.sum(te.if_then_else(i + r >= k - 1, X[i + r - (k - 1), ch], 0.0) * Wd[r, ch], axis=r),
            name="dw",
        )
        PW = matmul(DW, Wp, name="pw")
        return te.compute((t, c), lambda i, ch: te.max(PW[i, ch] * Sc[ch] + Sh[ch], 0.0) + X[i, ch], name="Y")

    return make_task(
        pattern="tcn_block_dw_pw_bn_relu_res",
        tag=f"{t}x{c}k{k}",
        level=2,
        domain=D,
        layout="[T,C]",
        ins=[In("X", (t, c)), In("Wd", (k, c)), In("Wp", (c, c)), In("Sc", (c,)), In("Sh", (c,))],
        outs=[Out("Y", (t, c))],
        te_fn=te_fn,
        ref=lambda x, wd, wp, sc, sh: np.maximum((_causal_dw_np(x, wd) @ wp) * sc + sh, 0) + x,
        flops=2 * t * c * (k + c) + 4 * t * c,
        desc=f"DS-TCN block: causal DW k{k} + pointwise {c}->{c} + folded BN + ReLU + residual ({src})",
    )


def _sig_np(v):
    return 0.5 * (1 + np.tanh(0.5 * v))


def rnn_cell(kind: str, n_in: int, hid: int, src: str) -> Task:
    g = 3 if kind == "gru" else 4
    ins = (
        [In("X", (1, n_in)), In("H", (1, hid))]
        + ([In("Cs", (1, hid))] if kind == "lstm" else [])
        + [In("Wx", (n_in, g * hid)), In("Wh", (hid, g * hid)), In("B", (g * hid,))]
    )

    def te_fn(X, H, *rest):
        from tvm import te

        sig = te.sigmoid
        if kind == "gru":
            Wx, Wh, B = rest
            GX, GH = matmul(X, Wx, bias=B, name="gx"), matmul(H, Wh, name="gh")
            z = lambda j: sig(GX[0, j] + GH[0, j])
            rr = lambda j: sig(GX[0, hid + j] + GH[0, hid + j])
            n = lambda j: te.tanh(GX[0, 2 * hid + j] + rr(j) * GH[0, 2 * hid + j])
            return te.compute((1, hid), lambda _, j: (1.0 - z(j)) * n(j) + z(j) * H[0, j], name="H_out")
        Cs, Wx, Wh, B = rest
        GX, GH = matmul(X, Wx, bias=B, name="gx"), matmul(H, Wh, name="gh")
        pre = lambda q, j: GX[0, q * hid + j] + GH[0, q * hid + j]
        C2 = te.compute(
            (1, hid), lambda _, j: sig(pre(1, j)) * Cs[0, j] + sig(pre(0, j)) * te.tanh(pre(2, j)), name="C_out"
        )
        H2 = te.compute((1, hid), lambda _, j: sig(pre(3, j)) * te.tanh(C2[0, j]), name="H_out")
        return H2, C2

    def ref(x, h, *rest):
        if kind == "gru":
            wx, wh, b = rest
            gx, gh = x @ wx + b, h @ wh
            z, r = _sig_np(gx[:, :hid] + gh[:, :hid]), _sig_np(gx[:, hid : 2 * hid] + gh[:, hid : 2 * hid])
            n = np.tanh(gx[:, 2 * hid :] + r * gh[:, 2 * hid :])
            return (1 - z) * n + z * h
        c, wx, wh, b = rest
        p = x @ wx + b + h @ wh
        i, f, gg, o = (p[:, q * hid : (q + 1) * hid] for q in range(4))
        c2 = _sig_np(f) * c + _sig_np(i) * np.tanh(gg)
        return _sig_np(o) * np.tanh(c2), c2

    outs = [Out("H_out", (1, hid))] + ([Out("C_out", (1, hid))] if kind == "lstm" else [])
    return make_task(
        pattern=f"{kind}_cell_step",
        tag=f"{n_in}x{hid}",
        level=2,
        domain=D,
        ins=ins,
        outs=outs,
        te_fn=te_fn,
        ref=ref,
        flops=2 * g * hid * (n_in + hid) + 10 * g * hid,
        scratch_budget=MCU_SCRATCH,
        desc=f"one {kind.upper()} time step (gates as GEMVs, PyTorch gate order), in {n_in} hidden {hid} ({src})",
    )


def pointwise_conv1d_glu(t: int, c: int, src: str) -> Task:
    """Conformer convolution-module entry: pointwise conv C -> 2C + bias, then GLU (a · sigmoid(g))."""

    def te_fn(X, W, B):
        from tvm import te

        P = matmul(X, W, bias=B, name="pw")
        return te.compute((t, c), lambda i, j: P[i, j] * te.sigmoid(P[i, c + j]), name="Y")

    def ref(x, w, b):
        p = x @ w + b
        return p[:, :c] * (0.5 * (1 + np.tanh(0.5 * p[:, c:])))  # overflow-free sigmoid

    return make_task(
        pattern="pointwise_conv1d_glu",
        tag=f"{t}x{c}",
        level=2,
        domain=D,
        layout="[T,C] W[C,2C]",
        ins=[In("X", (t, c)), In("W", (c, 2 * c)), In("B", (2 * c,))],
        outs=[Out("Y", (t, c))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * t * c * c + 5 * t * c,
        desc=f"pointwise conv1d {c}->{2 * c} + bias + GLU over {t} frames ({src})",
    )


def tasks() -> list[Task]:
    tcn, wh = "DS-TCN streaming wake word", "Whisper-tiny"
    out = []
    for k, c2 in ((3, 128), (5, 128), (10, 128), (15, 32)):
        out += [causal_dwconv1d(49, 128, k, tcn + " 1 s"), causal_dwconv1d(16, c2, k, tcn + " 0.5 s chunk")]
    out += [
        causal_dwconv1d(49, 128, 5, tcn, "float16"),
        causal_dwconv1d(32, 64, 5, "edge KWS fp16", "float16"),
        causal_dwconv1d(49, 128, 3, tcn + " int8", "int8"),
        causal_dwconv1d(32, 64, 3, "KWS int8", "int8"),
        streaming_dwconv1d(1, 128, 10, tcn + " one hop"),
        streaming_dwconv1d(4, 128, 15, tcn + " 4-hop chunk"),
        conv1d(50, 80, 384, 3, 1, 1, wh + " conv1 (0.5 s)"),
        conv1d(98, 40, 64, 3, 1, 1, "1-D CNN KWS on 40 mels"),
        conv1d(16, 384, 384, 3, 2, 1, wh + " conv2"),
        conv1d(49, 64, 64, 3, 2, 1, "KWS 1-D CNN downsample"),
        conv1d(64, 64, 64, 3, 1, 2, "TCN dilation 2"),
        conv1d(49, 128, 32, 3, 1, 2, "TC-ResNet dilated"),
        conv1d(64, 64, 64, 3, 1, 4, "TCN dilation 4"),
        conv1d(32, 128, 64, 3, 1, 4, "WaveNet-lite dilated"),
        conv1d(50, 80, 384, 3, 1, 1, wh + " conv1 + GELU", gelu=True),
        conv1d(98, 40, 64, 3, 1, 1, "1-D CNN KWS + GELU", gelu=True),
        conv1d(16, 384, 384, 3, 2, 1, wh + " conv2 + GELU", gelu=True),
        conv1d(49, 64, 64, 3, 2, 1, "KWS downsample + GELU", gelu=True),
        tcn_block(49, 128, 5, tcn),
        tcn_block(32, 32, 15, tcn + " last block"),
        rnn_cell("gru", 40, 128, "GRU KWS on 40 mels"),
        rnn_cell("gru", 257, 256, "RNNoise-style enhancement"),
        rnn_cell("lstm", 40, 128, "LSTM KWS"),
        rnn_cell("lstm", 64, 256, "streaming ASR encoder LSTM"),
        pointwise_conv1d_glu(64, 144, "Conformer-S conv module"),
        pointwise_conv1d_glu(49, 64, "KWS Conformer-lite"),
    ]
    return out
