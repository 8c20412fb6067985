"""NLP L1 operators (linear layers and GEMVs in fp32/fp16/int8, weight-only int8, norms, vocabulary
softmaxes, embedding gather, SwiGLU, pooling, retrieval scores, position encodings) at edge-transformer
shapes: MobileBERT (hidden 512, bottleneck 128, seq 128/384), Whisper-tiny (d 384, FFN 1536), tiny LLMs.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import (
    In,
    Out,
    gemm_flops,
    int8_gemm_scale,
    make_task,
    matmul,
    matmul_i8,
    matmul_i8_np,
    requant_np,
    requant_te,
)
from ._lib.norm import layernorm, layernorm_np, rmsnorm, rmsnorm_np
from ._lib.reduce import softmax_lastdim, softmax_np

D = "nlp"


def linear_nt(m: int, k: int, n: int, src: str) -> Task:
    return make_task(
        pattern="linear_nt",
        tag=f"{m}x{k}x{n}",
        level=1,
        domain=D,
        layout="row-major,W[N,K]",
        ins=[In("X", (m, k)), In("W", (n, k))],
        outs=[Out("Y", (m, n))],
        te_fn=lambda X, W: matmul(X, W, trans_b=True),
        ref=lambda x, w: x @ w.T,
        flops=gemm_flops(m, n, k),
        desc=f"X·Wᵀ, {m} tokens {k}->{n} ({src})",
    )


def linear_bias(m: int, k: int, n: int, src: str, dtype: str = "float32") -> Task:
    return make_task(
        pattern="linear_bias",
        tag=f"{m}x{k}x{n}",
        level=1,
        domain=D,
        layout="row-major,W[K,N]",
        ins=[In("X", (m, k), dtype), In("W", (k, n), dtype), In("B", (n,), dtype)],
        outs=[Out("Y", (m, n), dtype)],
        te_fn=lambda X, W, B: matmul(X, W, bias=B),
        ref=lambda x, w, b: x @ w + b,
        flops=gemm_flops(m, n, k) + m * n,
        desc=f"X·W + b, {m} tokens {k}->{n} ({src}{'; fp16 in, fp32 accumulation' if dtype == 'float16' else ''})",
    )


def linear_i8(m: int, k: int, n: int, src: str) -> Task:
    mult, shift = int8_gemm_scale(k)
    return make_task(
        pattern="linear",
        tag=f"{m}x{k}x{n}",
        level=1,
        domain=D,
        layout="row-major,W[N,K]",
        ins=[In("X", (m, k), "int8"), In("W", (n, k), "int8", low=-127), In("B", (n,), "int32", low=-4096, high=4096)],
        outs=[Out("Y", (m, n), "int8")],
        te_fn=lambda X, W, B: matmul_i8(X, W, B, mult, shift),
        ref=lambda x, w, b: matmul_i8_np(x, w, b, mult, shift),
        flops=gemm_flops(m, n, k),
        desc=f"int8 FC, int32 acc + bias, requant x{mult}>>{shift} (TFLite), {m} tokens {k}->{n} ({src})",
    )


def gemv(k: int, n: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(X, W):
        from tvm import te

        r = te.reduce_axis((0, k), name="k")
        acc = te.compute(
            (n,),
            lambda j: te.sum(X[r].astype("float32") * W[j, r].astype("float32"), axis=r),
            name="Y_acc" if dtype != "float32" else "Y",
        )
        return acc if dtype == "float32" else te.compute((n,), lambda j: acc[j].astype(dtype), name="Y")

    return make_task(
        pattern="gemv",
        tag=f"{k}x{n}",
        level=1,
        domain=D,
        layout="W[N,K]",
        ins=[In("X", (k,), dtype), In("W", (n, k), dtype)],
        outs=[Out("Y", (n,), dtype)],
        te_fn=te_fn,
        ref=lambda x, w: w @ x,
        flops=2 * k * n,
        desc=f"decode GEMV y = W x, {k}->{n} ({src}; memory-bound)",
    )


def gemv_i8(k: int, n: int, src: str) -> Task:
    mult, shift = int8_gemm_scale(k)

    def te_fn(X, W, B):
        from tvm import te

        r = te.reduce_axis((0, k), name="k")
        acc = te.compute((n,), lambda j: te.sum(X[r].astype("int32") * W[j, r].astype("int32"), axis=r), name="Y_acc")
        return te.compute((n,), lambda j: requant_te(acc[j] + B[j], mult, shift), name="Y")

    return make_task(
        pattern="gemv",
        tag=f"{k}x{n}",
        level=1,
        domain=D,
        layout="W[N,K]",
        ins=[In("X", (k,), "int8"), In("W", (n, k), "int8", low=-127), In("B", (n,), "int32", low=-4096, high=4096)],
        outs=[Out("Y", (n,), "int8")],
        te_fn=te_fn,
        ref=lambda x, w, b: requant_np(w.astype(np.int32) @ x.astype(np.int32) + b, mult, shift),
        flops=2 * k * n,
        desc=f"int8 decode GEMV + bias + requant, {k}->{n} ({src})",
    )


def log_softmax(rows: int, vocab: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        from ._lib.reduce import logsumexp_lastdim

        lse = logsumexp_lastdim(X, name="lse")
        return te.compute((rows, vocab), lambda i, j: X[i, j] - lse[i], name="Y")

    return make_task(
        pattern="log_softmax_vocab",
        tag=f"{rows}x{vocab}",
        level=1,
        domain=D,
        ins=[In("X", (rows, vocab))],
        outs=[Out("Y", (rows, vocab))],
        te_fn=te_fn,
        ref=lambda x: (
            x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))
        ),
        flops=4 * rows * vocab,
        # y = x - logsumexp: the float32 sum of a long row carries ~1e-4 relative error into every element as an
        # absolute one, beyond 1e-5 * max|y| on the elements near 0 (seen once in the naive lowering itself)
        atol=1e-4 if vocab >= 16384 else None,
        desc=f"log-softmax over a {vocab} vocabulary ({src}"
             + ("; atol 1e-4: long float32 sum)" if vocab >= 16384 else ")"),
    )


def softmax_temperature(rows: int, vocab: int, temp: float, src: str) -> Task:
    return make_task(
        pattern="softmax_temperature",
        tag=f"{rows}x{vocab}",
        level=1,
        domain=D,
        ins=[In("X", (rows, vocab))],
        outs=[Out("Y", (rows, vocab))],
        te_fn=lambda X: softmax_lastdim(X, scale=1.0 / temp),
        ref=lambda x: softmax_np(x / temp),
        flops=5 * rows * vocab,
        # A long row's float32 sum, when one logit dominates (p_max ~ 0.95, the rest spread over thousands of
        # terms added to ~1), is off by ~1e-4 relative in the naive lowering itself.
        rtol=1e-3 if vocab >= 16384 else None,
        desc=f"sampling distribution softmax(logits/{temp}) ({src}"
             + ("; rtol 1e-3: long float32 sum)" if vocab >= 16384 else ")"),
    )


def norm_task(kind: str, m: int, n: int, src: str, dtype: str = "float32") -> Task:
    if kind == "layernorm":
        ins = [In("X", (m, n), dtype), In("G", (n,), dtype), In("B", (n,), dtype)]
        te_fn, ref, fl = (lambda X, G, B: layernorm(X, G, B)), layernorm_np, 8 * m * n
    elif kind == "rmsnorm":
        ins = [In("X", (m, n), dtype), In("G", (n,), dtype)]
        te_fn, ref, fl = (lambda X, G: rmsnorm(X, G)), rmsnorm_np, 4 * m * n
    else:  # MobileBERT NoNorm: elementwise scale + shift, no statistics

        def te_fn(X, G, B):
            from tvm import te

            return te.compute((m, n), lambda i, j: X[i, j] * G[j] + B[j], name="Y")

        ins = [In("X", (m, n), dtype), In("G", (n,), dtype), In("B", (n,), dtype)]
        ref, fl = (lambda x, g, b: x * g + b), 2 * m * n
    pat = {"layernorm": "layernorm_lastdim", "rmsnorm": "rmsnorm_lastdim", "nonorm": "nonorm_scale_shift"}[kind]
    return make_task(
        pattern=pat,
        tag=f"{m}x{n}",
        level=1,
        domain=D,
        ins=ins,
        outs=[Out("Y", (m, n), dtype)],
        te_fn=te_fn,
        ref=ref,
        flops=fl,
        desc=f"{kind} over {n} features, {m} tokens ({src})",
    )


def swiglu(m: int, n: int, src: str) -> Task:
    """silu(gate) * up (GELU variants live in vision's elementwise set and in the L2 FFN epilogues)."""

    def te_fn(X, U):
        from tvm import te

        return te.compute((m, n), lambda i, j: X[i, j] * te.sigmoid(X[i, j]) * U[i, j], name="Y")

    return make_task(
        pattern="swiglu",
        tag=f"{m}x{n}",
        level=1,
        domain=D,
        ins=[In("X", (m, n)), In("U", (m, n))],
        outs=[Out("Y", (m, n))],
        te_fn=te_fn,
        ref=lambda g, u: g * (0.5 * (1 + np.tanh(0.5 * g))) * u,  # overflow-free sigmoid
        flops=6 * m * n,
        desc=f"SwiGLU gate silu(g)·u on the FFN intermediate {m}x{n} ({src})",
    )


def embedding_gather(seq: int, vocab: int, dim: int, src: str) -> Task:
    def te_fn(ids, E):
        from tvm import te

        return te.compute((seq, dim), lambda i, j: E[ids[i], j], name="Y")

    return make_task(
        pattern="embedding_gather",
        tag=f"{seq}x{vocab}x{dim}",
        level=1,
        domain=D,
        ins=[In("ids", (seq,), "int32", low=0, high=vocab), In("E", (vocab, dim))],
        outs=[Out("Y", (seq, dim))],
        te_fn=te_fn,
        ref=lambda ids, e: e[ids],
        flops=0,
        desc=f"token embedding lookup, vocab {vocab} x {dim}, {seq} tokens ({src})",
    )


def masked_mean_pool(s: int, dim: int, src: str) -> Task:
    def te_fn(X, L):
        from tvm import te

        r = te.reduce_axis((0, s), name="t")
        tot = te.compute((dim,), lambda j: te.sum(te.if_then_else(r < L[0], X[r, j], 0.0), axis=r), name="tot")
        return te.compute((dim,), lambda j: tot[j] / L[0].astype("float32"), name="Y")

    return make_task(
        pattern="masked_mean_pool",
        tag=f"{s}x{dim}",
        level=1,
        domain=D,
        ins=[In("X", (s, dim)), In("L", (1,), "int32", low=1, high=s + 1)],
        outs=[Out("Y", (dim,))],
        te_fn=te_fn,
        ref=lambda x, ln: x[: ln[0]].mean(0),
        flops=s * dim,
        desc=f"mean over the first L of {s} tokens (sentence embedding pooling) ({src})",
    )


def cosine_scores(n: int, dim: int, src: str) -> Task:
    def te_fn(q, E):
        from tvm import te

        r1, r2, r3 = (te.reduce_axis((0, dim), name=f"r{i}") for i in range(3))
        qn = te.compute((1,), lambda _: te.sum(q[r1] * q[r1], axis=r1), name="qn")
        en = te.compute((n,), lambda i: te.sum(E[i, r2] * E[i, r2], axis=r2), name="en")
        dot = te.compute((n,), lambda i: te.sum(E[i, r3] * q[r3], axis=r3), name="dot")
        return te.compute((n,), lambda i: dot[i] * te.rsqrt(qn[0] * en[i] + 1e-12), name="Y")

    return make_task(
        pattern="cosine_similarity_scores",
        tag=f"{n}x{dim}",
        level=1,
        domain=D,
        ins=[In("q", (dim,)), In("E", (n, dim))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda q, e: (e @ q) / np.sqrt((q @ q) * (e * e).sum(1) + 1e-12),
        flops=4 * n * dim,
        desc=f"cosine similarity of a query to {n} stored {dim}-d embeddings (retrieval) ({src})",
    )


def sinusoidal_posenc_add(s: int, dim: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te, tirx

        def f(i, j):
            inv = te.exp((tirx.indexdiv(j, 2) * 2).astype("float32") * (-np.log(10000.0) / dim))
            a = i.astype("float32") * inv
            return X[i, j] + tirx.Select(tirx.indexmod(j, 2) == 0, te.sin(a), te.cos(a))

        return te.compute((s, dim), f, name="Y")

    def ref(x):
        inv = np.exp((np.arange(dim) // 2 * 2).astype(np.float32) * np.float32(-np.log(10000.0) / dim))
        a = np.arange(s, dtype=np.float32)[:, None] * inv[None, :]
        return x + np.where(np.arange(dim) % 2 == 0, np.sin(a), np.cos(a))

    return make_task(
        pattern="sinusoidal_posenc_add",
        tag=f"{s}x{dim}",
        level=1,
        domain=D,
        ins=[In("X", (s, dim))],
        outs=[Out("Y", (s, dim))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * s * dim,
        atol=1e-4,
        desc=f"add sinusoidal position encodings computed in-kernel, {s}x{dim} ({src}; atol 1e-4·max: "
        f"float32 sin/cos of angles up to ~{s} rad differ between libms by ~3e-5)",
    )


def linear_w8a32(m: int, k: int, n: int, src: str) -> Task:
    def te_fn(X, W, S):
        from tvm import te

        r = te.reduce_axis((0, k), name="k")
        acc = te.compute((m, n), lambda i, j: te.sum(X[i, r] * W[j, r].astype("float32"), axis=r), name="acc")
        return te.compute((m, n), lambda i, j: acc[i, j] * S[j], name="Y")

    return make_task(
        pattern="linear_w8a32",
        tag=f"{m}x{k}x{n}",
        level=1,
        domain=D,
        dtype="float32",
        layout="W[N,K] int8 per-channel",
        ins=[In("X", (m, k)), In("W", (n, k), "int8", low=-127), In("S", (n,), dist="positive")],
        outs=[Out("Y", (m, n))],
        te_fn=te_fn,
        ref=lambda x, w, s: (x @ w.T.astype(np.float32)) * s,
        flops=gemm_flops(m, n, k),
        desc=f"weight-only int8 linear (per-channel scale), fp32 activations, {m}x{k}->{n} ({src})",
    )


def tasks() -> list[Task]:
    mb, wh, llm = "MobileBERT", "Whisper-tiny", "tiny LLM decode"
    return [
        linear_nt(64, 512, 128, mb + " bottleneck in"),
        linear_nt(32, 384, 384, wh + " attention proj"),
        linear_bias(64, 128, 512, mb + " bottleneck out"),
        linear_bias(8, 384, 1536, wh + " FFN up"),
        linear_bias(64, 512, 128, mb, "float16"),
        linear_bias(32, 384, 384, wh, "float16"),
        linear_i8(128, 512, 128, mb + " int8"),
        linear_i8(128, 128, 512, mb + " int8 FFN"),
        gemv(512, 512, mb + " hidden"),
        gemv(384, 1536, wh + " FFN up"),
        gemv(2048, 512, llm, "float16"),
        gemv(1024, 1024, llm, "float16"),
        gemv_i8(512, 512, llm + " int8"),
        gemv_i8(1536, 384, wh + " FFN down int8"),
        log_softmax(4, 30522, mb + " MLM head vocab"),
        log_softmax(16, 4096, "keyword/LM small vocab"),
        softmax_temperature(1, 32000, 0.7, llm + " sampling"),
        softmax_temperature(8, 2048, 1.5, "speculative draft"),
        norm_task("layernorm", 64, 384, wh),
        norm_task("layernorm", 128, 768, "BERT-base edge"),
        norm_task("layernorm", 128, 512, mb, "float16"),
        norm_task("layernorm", 64, 384, wh, "float16"),
        norm_task("rmsnorm", 128, 512, llm),
        norm_task("rmsnorm", 16, 2048, llm + " 1B hidden"),
        norm_task("nonorm", 128, 512, mb + " NoNorm"),
        norm_task("nonorm", 384, 128, mb + " NoNorm bottleneck"),
        swiglu(64, 1408, llm + " gated FFN"),
        swiglu(128, 512, "edge gated FFN"),
        embedding_gather(128, 30522, 128, mb + " trigram-free lookup"),
        embedding_gather(64, 8000, 256, "edge vocab"),
        masked_mean_pool(128, 512, mb),
        masked_mean_pool(64, 384, wh + " encoder"),
        cosine_scores(2048, 384, "MiniLM retrieval"),
        cosine_scores(4096, 256, "on-device semantic search"),
        sinusoidal_posenc_add(375, 384, wh + " 7.5 s chunk"),
        sinusoidal_posenc_add(128, 512, "edge transformer"),
        linear_w8a32(16, 512, 512, llm + " W8A32"),
        linear_w8a32(8, 384, 1536, wh + " W8A32 FFN"),
    ]
