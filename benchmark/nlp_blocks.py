"""NLP L2 fused patterns: GEMM + epilogues (bias/GELU/ReLU/residual/norm), FFN, attention heads,
QKV projection with head split, embedding + LayerNorm, int8 FC + ReLU, scoring heads.
"""

from __future__ import annotations

from math import pi, sqrt

import numpy as np

from leka.tasks.task import Task

from ._lib.attention import attention, attention_np, rope_tables, rotary, rotary_np
from ._lib.linalg import In, Out, gemm_flops, int8_gemm_scale, make_task, matmul, matmul_i8, matmul_i8_np
from ._lib.norm import layernorm, layernorm_np, rmsnorm, rmsnorm_np
from ._lib.reduce import logsumexp_lastdim, logsumexp_np, softmax_lastdim, softmax_np

D = "nlp"
C_GELU = sqrt(2 / pi)


def _gelu_te(v):
    from tvm import te

    return 0.5 * v * (1.0 + te.tanh(C_GELU * (v + 0.044715 * v * v * v)))


def _gelu_np(v):
    return 0.5 * v * (1 + np.tanh(C_GELU * (v + 0.044715 * v**3)))


def linear_epilogue(kind: str, m: int, k: int, n: int, src: str) -> Task:
    """X·W + b followed by gelu | relu | residual+layernorm | residual+nonorm."""
    ins = [In("X", (m, k)), In("W", (k, n)), In("B", (n,))]
    if kind in ("residual_layernorm", "residual_nonorm"):
        ins += [In("R", (m, n)), In("G", (n,)), In("Be", (n,))]

    def te_fn(X, W, B, *rest):
        from tvm import te

        Y = matmul(X, W, bias=B, name="lin")
        if kind == "gelu":
            return te.compute((m, n), lambda i, j: _gelu_te(Y[i, j]), name="Y")
        if kind == "relu":
            return te.compute((m, n), lambda i, j: te.max(Y[i, j], 0.0), name="Y")
        R, G, Be = rest
        S = te.compute((m, n), lambda i, j: Y[i, j] + R[i, j], name="res")
        if kind == "residual_nonorm":
            return te.compute((m, n), lambda i, j: S[i, j] * G[j] + Be[j], name="Y")
        return layernorm(S, G, Be)

    def ref(x, w, b, *rest):
        y = x @ w + b
        if kind == "gelu":
            return _gelu_np(y)
        if kind == "relu":
            return np.maximum(y, 0)
        r, g, be = rest
        return (y + r) * g + be if kind == "residual_nonorm" else layernorm_np(y + r, g, be)

    return make_task(
        pattern=f"linear_bias_{kind}",
        tag=f"{m}x{k}x{n}",
        level=2,
        domain=D,
        ins=ins,
        outs=[Out("Y", (m, n))],
        te_fn=te_fn,
        ref=ref,
        flops=gemm_flops(m, n, k) + 8 * m * n,
        desc=f"linear {k}->{n} + bias + {kind.replace('_', ' + ')}, {m} tokens ({src})",
    )


def ffn(m: int, d: int, f: int, src: str, gated: bool = False) -> Task:
    ins = [In("X", (m, d)), In("W1", (d, f))] + ([In("Wg", (d, f))] if gated else []) + [In("W2", (f, d))]

    def te_fn(X, W1, *rest):
        from tvm import te

        H = matmul(X, W1, name="up")
        if gated:
            Wg, W2 = rest
            G = matmul(X, Wg, name="gate")
            A = te.compute((m, f), lambda i, j: G[i, j] * te.sigmoid(G[i, j]) * H[i, j], name="act")
        else:
            (W2,) = rest
            A = te.compute((m, f), lambda i, j: _gelu_te(H[i, j]), name="act")
        return matmul(A, W2, name="Y")

    def ref(x, w1, *rest):
        if gated:
            wg, w2 = rest
            g = x @ wg
            return (g * (0.5 * (1 + np.tanh(0.5 * g))) * (x @ w1)) @ w2  # overflow-free sigmoid
        return _gelu_np(x @ w1) @ rest[0]

    mults = 3 if gated else 2
    return make_task(
        pattern="ffn_swiglu" if gated else "ffn_gelu",
        tag=f"{m}x{d}x{f}",
        level=2,
        domain=D,
        ins=ins,
        outs=[Out("Y", (m, d))],
        te_fn=te_fn,
        ref=ref,
        flops=mults * gemm_flops(m, f, d),
        desc=f"{'SwiGLU' if gated else 'GELU'} FFN {d}->{f}->{d}, {m} tokens ({src})",
    )


def attention_block(h: int, s: int, d: int, src: str, mode: str = "full", dtype: str = "float32") -> Task:
    ins = [In("Q", (h, s, d), dtype), In("K", (h, s, d), dtype), In("V", (h, s, d), dtype)]
    if mode == "padmask":
        ins.append(In("L", (1,), "int32", low=s // 4, high=s + 1))

    def te_fn(Q, K, V, *rest):
        from tvm import te

        if dtype == "float32":
            return attention(Q, K, V, causal=mode == "causal", lengths=rest[0] if rest else None)
        # fp16: scores/softmax/PV accumulate in fp32; the PV product's fp32 output is cast back
        Vf = te.compute((h, s, d), lambda a, b, c: V[a, b, c].astype("float32"), name="V32")
        Y = attention(Q, K, Vf, causal=mode == "causal", name="Y32")
        return te.compute((h, s, d), lambda a, b, c: Y[a, b, c].astype(dtype), name="Y")

    def ref(q, k, v, *rest):
        return attention_np(q, k, v, causal=mode == "causal", length=int(rest[0][0]) if rest else None)

    pat = {"full": "attention_head", "causal": "attention_causal", "padmask": "attention_padmask"}[mode]
    return make_task(
        pattern=pat,
        tag=f"{h}x{s}x{d}",
        level=2,
        domain=D,
        layout="[H,S,D]",
        ins=ins,
        outs=[Out("Y", (h, s, d), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=4 * h * s * s * d + 5 * h * s * s,
        desc=f"softmax(QKᵀ/√d{' + mask' if mode != 'full' else ''})·V, {h} heads seq {s} dh {d} ({src})",
    )


def qkv_split(s: int, dm: int, h: int, src: str) -> Task:
    dh = dm // h

    def te_fn(X, W, B):
        from tvm import te

        P = matmul(X, W, bias=B, name="qkv")

        def part(o):
            return lambda a, i, j: P[i, o * dm + a * dh + j]

        return [te.compute((h, s, dh), part(o), name=nm) for o, nm in enumerate(("Q", "K", "V"))]

    def ref(x, w, b):
        p = (x @ w + b).reshape(s, 3, h, dh).transpose(1, 2, 0, 3)
        return p[0], p[1], p[2]

    return make_task(
        pattern="qkv_proj_split_heads",
        tag=f"{s}x{dm}x{h}",
        level=2,
        domain=D,
        ins=[In("X", (s, dm)), In("W", (dm, 3 * dm)), In("B", (3 * dm,))],
        outs=[Out(nm, (h, s, dh)) for nm in ("Q", "K", "V")],
        te_fn=te_fn,
        ref=ref,
        flops=gemm_flops(s, 3 * dm, dm),
        desc=f"fused QKV projection + head split, d {dm}, {h} heads, {s} tokens ({src})",
    )


def embed_layernorm(s: int, vocab: int, dm: int, src: str) -> Task:
    def te_fn(ids, E, P, G, B):
        from tvm import te

        X = te.compute((s, dm), lambda i, j: E[ids[i], j] + P[i, j], name="emb")
        return layernorm(X, G, B)

    return make_task(
        pattern="embed_pos_layernorm",
        tag=f"{s}x{vocab}x{dm}",
        level=2,
        domain=D,
        ins=[
            In("ids", (s,), "int32", low=0, high=vocab),
            In("E", (vocab, dm)),
            In("P", (s, dm)),
            In("G", (dm,)),
            In("B", (dm,)),
        ],
        outs=[Out("Y", (s, dm))],
        te_fn=te_fn,
        ref=lambda ids, e, p, g, b: layernorm_np(e[ids] + p, g, b),
        flops=9 * s * dm,
        desc=f"token gather + learned positions + LayerNorm, vocab {vocab} d {dm} ({src})",
    )


def linear_i8_relu(m: int, k: int, n: int, src: str) -> Task:
    mult, shift = int8_gemm_scale(k)
    return make_task(
        pattern="linear_relu",
        tag=f"{m}x{k}x{n}",
        level=2,
        domain=D,
        layout="W[N,K]",
        ins=[In("X", (m, k), "int8"), In("W", (n, k), "int8", low=-127), In("B", (n,), "int32", low=-4096, high=4096)],
        outs=[Out("Y", (m, n), "int8")],
        te_fn=lambda X, W, B: matmul_i8(X, W, B, mult, shift, relu=True),
        ref=lambda x, w, b: matmul_i8_np(x, w, b, mult, shift, relu=True),
        flops=gemm_flops(m, n, k),
        desc=f"int8 FC + bias + requant + fused ReLU (clamp at zero point), {m}x{k}->{n} ({src})",
    )


def token_nll(rows: int, vocab: int, src: str) -> Task:
    def te_fn(X, T):
        from tvm import te

        lse = logsumexp_lastdim(X, name="lse")
        return te.compute((rows,), lambda i: lse[i] - X[i, T[i]], name="Y")

    return make_task(
        pattern="log_softmax_gather_nll",
        tag=f"{rows}x{vocab}",
        level=2,
        domain=D,
        ins=[In("X", (rows, vocab)), In("T", (rows,), "int32", low=0, high=vocab)],
        outs=[Out("Y", (rows,))],
        te_fn=te_fn,
        ref=lambda x, t: logsumexp_np(x) - x[np.arange(rows), t],
        flops=4 * rows * vocab,
        desc=f"per-token negative log-likelihood (log-softmax + target gather), vocab {vocab} ({src})",
    )


def rmsnorm_linear(m: int, k: int, n: int, src: str) -> Task:
    return make_task(
        pattern="rmsnorm_linear",
        tag=f"{m}x{k}x{n}",
        level=2,
        domain=D,
        ins=[In("X", (m, k)), In("G", (k,)), In("W", (k, n))],
        outs=[Out("Y", (m, n))],
        te_fn=lambda X, G, W: matmul(rmsnorm(X, G, name="xn"), W),
        ref=lambda x, g, w: rmsnorm_np(x, g) @ w,
        flops=gemm_flops(m, n, k) + 4 * m * k,
        desc=f"RMSNorm prologue + linear {k}->{n}, {m} tokens ({src})",
    )


def decode_attention(h: int, t: int, d: int, src: str) -> Task:
    def te_fn(q, K, V):
        from tvm import te

        r = te.reduce_axis((0, d), name="kd")
        S = te.compute((h, t), lambda a, j: te.sum(q[a, r] * K[a, j, r], axis=r), name="scores")
        P = softmax_lastdim(S, scale=1.0 / sqrt(d), name="P")
        rt = te.reduce_axis((0, t), name="rt")
        return te.compute((h, d), lambda a, c: te.sum(P[a, rt] * V[a, rt, c], axis=rt), name="Y")

    def ref(q, k, v):
        p = softmax_np(np.einsum("hd,htd->ht", q, k) / np.float32(sqrt(d)))
        return np.einsum("ht,htd->hd", p, v)

    return make_task(
        pattern="decode_attention_kvcache",
        tag=f"{h}x{t}x{d}",
        level=2,
        domain=D,
        ins=[In("q", (h, d)), In("K", (h, t, d)), In("V", (h, t, d))],
        outs=[Out("Y", (h, d))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * h * t * d + 5 * h * t,
        desc=f"single-query attention over a {t}-entry KV cache, {h} heads dh {d} ({src})",
    )


def rope_scores(h: int, s: int, d: int, src: str) -> Task:
    c, sn = rope_tables(s, d)

    def te_fn(Q, K, C, S):
        from tvm import te

        Qr, Kr = rotary(Q, C, S, name="qr"), rotary(K, C, S, name="kr")
        r = te.reduce_axis((0, d), name="k")
        return te.compute((h, s, s), lambda a, i, j: te.sum(Qr[a, i, r] * Kr[a, j, r], axis=r), name="Y")

    return make_task(
        pattern="rope_qk_scores",
        tag=f"{h}x{s}x{d}",
        level=2,
        domain=D,
        ins=[
            In("Q", (h, s, d)),
            In("K", (h, s, d)),
            In("C", (s, d // 2), fixed=lambda: c),
            In("S", (s, d // 2), fixed=lambda: sn),
        ],
        outs=[Out("Y", (h, s, s))],
        te_fn=te_fn,
        ref=lambda q, k, cc, ss: rotary_np(q, cc, ss) @ rotary_np(k, cc, ss).transpose(0, 2, 1),
        flops=2 * h * s * s * d + 6 * h * s * d,
        desc=f"rotary on Q and K then QKᵀ, {h}x{s}x{d} ({src})",
    )


def alibi_causal_softmax(h: int, s: int, d: int, src: str) -> Task:
    slopes = [2.0 ** (-8.0 * (i + 1) / h) for i in range(h)]

    def te_fn(Q, K):
        from tvm import tirx

        from ._lib.linalg import batch_matmul

        S = batch_matmul(Q, K, trans_b=True, scale=1.0 / sqrt(d), name="scores")

        def bias(a, i, j):
            slope = tirx.const(slopes[0], "float32")
            for k in range(1, h):
                slope = tirx.Select(a == k, tirx.const(slopes[k], "float32"), slope)
            return tirx.Select(j > i, tirx.const(-1e9, "float32"), slope * (j - i).astype("float32"))

        return softmax_lastdim(S, mask=bias)

    def ref(q, k):
        sc = q @ k.transpose(0, 2, 1) / np.float32(sqrt(d))
        rel = (np.arange(s)[None, :] - np.arange(s)[:, None]).astype(np.float32)
        b = np.array(slopes, np.float32)[:, None, None] * rel[None]
        return softmax_np(sc + np.where(rel[None] > 0, -1e9, b))

    return make_task(
        pattern="alibi_causal_scores_softmax",
        tag=f"{h}x{s}x{d}",
        level=2,
        domain=D,
        ins=[In("Q", (h, s, d)), In("K", (h, s, d))],
        outs=[Out("Y", (h, s, s))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * h * s * s * d + 7 * h * s * s,
        desc=f"QKᵀ/√d + ALiBi linear distance bias (per-head slopes) + causal softmax, {h}x{s}x{d} ({src})",
    )


def tasks() -> list[Task]:
    mb, wh, llm = "MobileBERT", "Whisper-tiny", "tiny LLM"
    return [
        linear_epilogue("gelu", 8, 384, 1536, wh + " FFN up"),
        linear_epilogue("gelu", 32, 128, 512, "edge BERT FFN"),
        linear_epilogue("relu", 64, 128, 512, mb + " FFN"),
        linear_epilogue("relu", 32, 512, 128, mb + " bottleneck"),
        linear_epilogue("residual_layernorm", 32, 384, 384, wh + " attn out"),
        linear_epilogue("residual_layernorm", 64, 128, 512, mb + " bottleneck up"),
        linear_epilogue("residual_nonorm", 64, 512, 128, mb + " NoNorm"),
        linear_epilogue("residual_nonorm", 64, 128, 128, mb + " stacked FFN"),
        ffn(16, 128, 512, mb + "-size"),
        ffn(4, 384, 1536, wh + " decode"),
        ffn(2, 512, 1408, llm, gated=True),
        ffn(16, 128, 512, "edge gated", gated=True),
        attention_block(4, 128, 32, mb),
        attention_block(6, 64, 64, wh),
        attention_block(6, 64, 64, wh + " decoder", mode="causal"),
        attention_block(8, 96, 32, llm, mode="causal"),
        attention_block(4, 128, 32, mb + " padded batch", mode="padmask"),
        attention_block(6, 96, 64, wh, mode="padmask"),
        attention_block(4, 128, 32, mb, dtype="float16"),
        attention_block(6, 64, 64, wh, dtype="float16"),
        qkv_split(32, 128, 4, mb + " bottleneck"),
        qkv_split(16, 384, 6, wh),
        embed_layernorm(128, 8000, 128, "edge BERT"),
        embed_layernorm(64, 5000, 384, wh + "-size"),
        linear_i8_relu(64, 128, 512, mb + " int8 FFN"),
        linear_i8_relu(64, 512, 128, mb + " int8 bottleneck"),
        token_nll(16, 8192, "on-device LM scoring"),
        token_nll(4, 32000, llm + " vocab"),
        rmsnorm_linear(16, 512, 512, llm),
        rmsnorm_linear(16, 256, 768, "edge decoder"),
        decode_attention(6, 448, 64, wh + " decoder"),
        decode_attention(16, 512, 64, llm),
        rope_scores(4, 128, 32, llm + " small"),
        rope_scores(8, 64, 64, llm),
        alibi_causal_softmax(4, 128, 32, "BLOOM-style edge LM"),
        alibi_causal_softmax(8, 64, 64, "MPT-style tiny LM"),
    ]
