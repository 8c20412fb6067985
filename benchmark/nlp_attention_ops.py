"""NLP L1 attention operators at edge-transformer shapes: scaled QKᵀ (fp32/fp16/int8), P·V, masked
softmax (causal, key padding), decode-step scores against a KV cache, KV-cache write, rotary embedding,
head split. MobileBERT (4 heads of 32, seq 128), Whisper-tiny (6 heads of 64), tiny-LLM decode.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.attention import NEG, rope_tables, rotary, rotary_np
from ._lib.linalg import In, Out, batch_matmul, make_task
from ._lib.reduce import softmax_lastdim, softmax_np

D = "nlp"


def attn_scores(h: int, s: int, d: int, src: str, dtype: str = "float32") -> Task:
    def ref(q, k):
        return np.einsum("hid,hjd->hij", q, k) / np.sqrt(d)

    return make_task(
        pattern="attn_scores_qkt",
        tag=f"{h}x{s}x{d}",
        level=1,
        domain=D,
        layout="[H,S,D]",
        ins=[In("Q", (h, s, d), dtype), In("K", (h, s, d), dtype)],
        outs=[Out("Y", (h, s, s), dtype)],
        te_fn=lambda Q, K: batch_matmul(Q, K, trans_b=True, scale=1.0 / float(np.sqrt(d))),
        ref=ref,
        flops=2 * h * s * s * d,
        desc=f"scaled QKᵀ per head, {h} heads seq {s} dh {d} ({src})",
    )


def attn_scores_i8(h: int, s: int, d: int, src: str) -> Task:
    def te_fn(Q, K):
        from tvm import te

        r = te.reduce_axis((0, d), name="k")
        return te.compute(
            (h, s, s), lambda b, i, j: te.sum(Q[b, i, r].astype("int32") * K[b, j, r].astype("int32"), axis=r), name="Y"
        )

    return make_task(
        pattern="attn_scores_qkt",
        tag=f"{h}x{s}x{d}",
        level=1,
        domain=D,
        layout="[H,S,D]",
        dtype="int8",
        ins=[In("Q", (h, s, d), "int8"), In("K", (h, s, d), "int8")],
        outs=[Out("Y", (h, s, s), "int32")],
        te_fn=te_fn,
        ref=lambda q, k: np.einsum("hid,hjd->hij", q.astype(np.int32), k.astype(np.int32)),
        flops=2 * h * s * s * d,
        desc=f"int8 QKᵀ with int32 scores, {h}x{s}x{d} ({src})",
    )


def attn_context(h: int, s: int, d: int, src: str) -> Task:
    return make_task(
        pattern="attn_context_pv",
        tag=f"{h}x{s}x{d}",
        level=1,
        domain=D,
        layout="[H,S,S]·[H,S,D]",
        ins=[In("P", (h, s, s), dist="positive"), In("V", (h, s, d))],
        outs=[Out("Y", (h, s, d))],
        te_fn=lambda P, V: batch_matmul(P, V),
        ref=lambda p, v: p @ v,
        flops=2 * h * s * s * d,
        desc=f"attention probabilities · V, {h} heads seq {s} dh {d} ({src})",
    )


def softmax_causal(h: int, s: int, src: str) -> Task:
    def te_fn(X):
        from tvm import tirx

        return softmax_lastdim(
            X, mask=lambda b, i, j: tirx.Select(j > i, tirx.const(NEG, "float32"), tirx.const(0.0, "float32"))
        )

    mask = np.where(np.arange(s)[None, :] > np.arange(s)[:, None], NEG, 0.0)
    return make_task(
        pattern="softmax_causal",
        tag=f"{h}x{s}",
        level=1,
        domain=D,
        ins=[In("X", (h, s, s))],
        outs=[Out("Y", (h, s, s))],
        te_fn=te_fn,
        ref=lambda x: softmax_np(x + mask),
        flops=5 * h * s * s,
        desc=f"causal-masked softmax over keys, {h} heads seq {s} ({src})",
    )


def softmax_padmask(h: int, s: int, src: str) -> Task:
    def te_fn(X, L):
        from tvm import tirx

        return softmax_lastdim(
            X, mask=lambda b, i, j: tirx.Select(j >= L[0], tirx.const(NEG, "float32"), tirx.const(0.0, "float32"))
        )

    return make_task(
        pattern="softmax_padmask",
        tag=f"{h}x{s}",
        level=1,
        domain=D,
        ins=[In("X", (h, s, s)), In("L", (1,), "int32", low=s // 4, high=s + 1)],
        outs=[Out("Y", (h, s, s))],
        te_fn=te_fn,
        ref=lambda x, ln: softmax_np(x + np.where(np.arange(s) >= ln[0], NEG, 0.0)),
        flops=5 * h * s * s,
        desc=f"softmax with key-padding mask (valid length L), {h}x{s} ({src})",
    )


def softmax_f16(h: int, s: int, src: str) -> Task:
    return make_task(
        pattern="softmax_keys",
        tag=f"{h}x{s}",
        level=1,
        domain=D,
        ins=[In("X", (h, s, s), "float16")],
        outs=[Out("Y", (h, s, s), "float16")],
        te_fn=lambda X: softmax_lastdim(X),
        ref=softmax_np,
        flops=5 * h * s * s,
        desc=f"fp16 softmax over keys (fp32 internally), {h}x{s} ({src})",
    )


def rope(h: int, s: int, d: int, src: str) -> Task:
    c, sn = rope_tables(s, d)
    return make_task(
        pattern="rotary_embedding",
        tag=f"{h}x{s}x{d}",
        level=1,
        domain=D,
        layout="[H,S,D] half-split",
        ins=[In("X", (h, s, d)), In("C", (s, d // 2), fixed=lambda: c), In("S", (s, d // 2), fixed=lambda: sn)],
        outs=[Out("Y", (h, s, d))],
        te_fn=lambda X, C, S: rotary(X, C, S),
        ref=rotary_np,
        flops=3 * h * s * d,
        desc=f"rotary position embedding (NeoX half-split), {h}x{s}x{d} ({src})",
    )


def split_heads(s: int, h: int, d: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        return te.compute((h, s, d), lambda hh, i, j: X[i, hh * d + j], name="Y")

    return make_task(
        pattern="split_heads_transpose",
        tag=f"{s}x{h}x{d}",
        level=1,
        domain=D,
        layout="[S,H*D]->[H,S,D]",
        ins=[In("X", (s, h * d))],
        outs=[Out("Y", (h, s, d))],
        te_fn=te_fn,
        ref=lambda x: x.reshape(s, h, d).transpose(1, 0, 2),
        flops=0,
        desc=f"split heads [S,H·D] -> [H,S,D], {h} heads of {d} ({src})",
    )


def decode_scores(h: int, t: int, d: int, src: str) -> Task:
    def te_fn(q, K):
        from tvm import te

        r = te.reduce_axis((0, d), name="k")
        dot = te.compute((h, t), lambda hh, j: te.sum(q[hh, r] * K[hh, j, r], axis=r), name="dot")
        return te.compute((h, t), lambda hh, j: dot[hh, j] * (1.0 / float(np.sqrt(d))), name="Y")

    return make_task(
        pattern="decode_attn_scores",
        tag=f"{h}x{t}x{d}",
        level=1,
        domain=D,
        layout="q[H,D] K[H,T,D]",
        ins=[In("q", (h, d)), In("K", (h, t, d))],
        outs=[Out("Y", (h, t))],
        te_fn=te_fn,
        ref=lambda q, k: np.einsum("hd,htd->ht", q, k) / np.sqrt(d),
        flops=2 * h * t * d,
        desc=f"one decode step's query against a {t}-entry KV cache, {h} heads ({src})",
    )


def kv_cache_append(h: int, t: int, d: int, src: str) -> Task:
    def te_fn(Kc, Kn, P):
        from tvm import te

        return te.compute((h, t, d), lambda a, i, j: te.if_then_else(i == P[0], Kn[a, j], Kc[a, i, j]), name="Y")

    def ref(kc, kn, p):
        out = kc.copy()
        out[:, p[0]] = kn
        return out

    return make_task(
        pattern="kv_cache_write_token",
        tag=f"{h}x{t}x{d}",
        level=1,
        domain=D,
        layout="[H,T,D]",
        ins=[In("Kc", (h, t, d)), In("Kn", (h, d)), In("P", (1,), "int32", low=0, high=t)],
        outs=[Out("Y", (h, t, d))],
        te_fn=te_fn,
        ref=ref,
        flops=0,
        desc=f"write one decode step's K/V row at position P into a {t}-entry cache (out-of-place), {h} heads ({src})",
    )


def tasks() -> list[Task]:
    mb, wh, llm = "MobileBERT", "Whisper-tiny", "tiny LLM decode"
    return [
        attn_scores(4, 128, 32, mb),
        attn_scores(6, 64, 64, wh),
        attn_scores(4, 128, 32, mb, "float16"),
        attn_scores(6, 96, 64, wh, "float16"),
        attn_scores_i8(4, 128, 32, mb + " int8"),
        attn_scores_i8(6, 64, 64, wh + " int8"),
        attn_context(4, 128, 32, mb),
        attn_context(6, 64, 64, wh),
        softmax_causal(6, 64, wh + " decoder"),
        softmax_causal(8, 128, llm + " prefill"),
        softmax_padmask(4, 128, mb),
        softmax_padmask(6, 96, wh),
        softmax_f16(4, 128, mb),
        softmax_f16(6, 64, wh),
        rope(4, 128, 32, mb + "-size heads"),
        rope(8, 64, 64, llm),
        split_heads(128, 4, 32, mb),
        split_heads(64, 6, 64, wh),
        decode_scores(6, 448, 64, wh + " decoder"),
        decode_scores(16, 512, 64, llm),
        kv_cache_append(6, 448, 64, wh + " decoder cache"),
        kv_cache_append(16, 512, 64, llm + " cache"),
    ]
