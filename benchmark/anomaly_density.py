"""Anomaly density and distance scores (L1 + L2): Mahalanobis (fp32/fp16), diagonal Gaussian and GMM
log-likelihoods, PCA residual, RBF one-class SVM, HBOS, VAE head, window statistics, memory-bank
cosine score, free-energy OOD score.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task, matmul
from ._lib.reduce import logsumexp_np

D = "anomaly-detection"

AD = "MLPerf Tiny AD autoencoder"


def mahalanobis(b: int, d: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(X, Mu, Pm):
        from tvm import te

        f = lambda v: v.astype("float32") if dtype != "float32" else v
        Dx = te.compute((b, d), lambda i, j: f(X[i, j]) - f(Mu[j]), name="diff")
        a, c = te.reduce_axis((0, d), "a"), te.reduce_axis((0, d), "c")
        T = te.compute((b, d), lambda i, j: te.sum(Dx[i, a] * f(Pm[a, j]), axis=a), name="t")
        S = te.compute((b,), lambda i: te.sum(T[i, c] * Dx[i, c], axis=c), name="Y" if dtype == "float32" else "m32")
        return S if dtype == "float32" else te.compute((b,), lambda i: S[i].astype(dtype), name="Y")

    def make(rng, dist):
        m = rng.standard_normal((d, d))
        prec = m @ m.T / d + np.eye(d)
        from leka.tasks.task import generate

        return [generate(In("X", (b, d), dtype), rng, dist), rng.standard_normal(d).astype(dtype), prec.astype(dtype)]

    return make_task(
        pattern="mahalanobis_distance",
        tag=f"{b}x{d}",
        level=1,
        domain=D,
        ins=[In("X", (b, d), dtype), In("Mu", (d,), dtype), In("Pm", (d, d), dtype)],
        outs=[Out("Y", (b,), dtype)],
        te_fn=te_fn,
        ref=lambda x, mu, p: np.einsum("bi,ij,bj->b", x - mu, p, x - mu),
        flops=2 * b * d * d + 3 * b * d,
        desc=f"squared Mahalanobis distance (x-μ)ᵀ Σ⁻¹ (x-μ) with a given precision, {b} x {d} ({src})",
        make_inputs=make,
    )


def gaussian_loglik(b: int, d: int, src: str) -> Task:
    def te_fn(X, Mu, Ls):
        from tvm import te

        r = te.reduce_axis((0, d), "j")
        return te.compute(
            (b,),
            lambda i: te.sum(
                -0.5 * ((X[i, r] - Mu[r]) * te.exp(-Ls[r])) * ((X[i, r] - Mu[r]) * te.exp(-Ls[r]))
                - Ls[r]
                - 0.9189385332046727,
                axis=r,
            ),
            name="Y",
        )

    return make_task(
        pattern="diag_gaussian_loglik",
        tag=f"{b}x{d}",
        level=1,
        domain=D,
        ins=[In("X", (b, d)), In("Mu", (d,)), In("Ls", (d,), low=-1.0, high=1.0)],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda x, mu, ls: (-0.5 * ((x - mu) * np.exp(-ls)) ** 2 - ls - 0.9189385332046727).sum(1),
        flops=6 * b * d,
        desc=f"diagonal-Gaussian log-likelihood (log σ parameters), {b} x {d} ({src})",
    )


def gmm_loglik(b: int, d: int, k: int, src: str) -> Task:
    def te_fn(X, Mu, Ls, Lw):
        from tvm import te

        r = te.reduce_axis((0, d), "j")
        comp = te.compute(
            (b, k),
            lambda i, c: te.sum(
                -0.5 * ((X[i, r] - Mu[c, r]) * te.exp(-Ls[c, r])) * ((X[i, r] - Mu[c, r]) * te.exp(-Ls[c, r]))
                - Ls[c, r],
                axis=r,
            ),
            name="comp",
        )
        lp = te.compute((b, k), lambda i, c: comp[i, c] + Lw[c] - 0.9189385332046727 * d, name="lp")
        from ._lib.reduce import logsumexp_lastdim

        return logsumexp_lastdim(lp)

    def ref(x, mu, ls, lw):
        z = (x[:, None, :] - mu[None]) * np.exp(-ls)[None]
        lp = (-0.5 * z * z - ls[None]).sum(-1) + lw - 0.9189385332046727 * d
        return logsumexp_np(lp)

    return make_task(
        pattern="gmm_loglik_logsumexp",
        tag=f"{b}x{d}x{k}",
        level=2,
        domain=D,
        ins=[
            In("X", (b, d)),
            In("Mu", (k, d)),
            In("Ls", (k, d), low=-1.0, high=1.0),
            In("Lw", (k,), low=-3.0, high=0.0),
        ],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=6 * b * d * k + 5 * b * k,
        desc=f"{k}-component diagonal GMM log-likelihood with log-sum-exp, {b} x {d} ({src})",
    )


def pca_residual(b: int, d: int, k: int, src: str) -> Task:
    def te_fn(X, V):
        from tvm import te

        Z = matmul(X, V, name="proj")
        R = matmul(Z, V, trans_b=True, name="recon")
        r = te.reduce_axis((0, d), "j")
        return te.compute((b,), lambda i: te.sum((X[i, r] - R[i, r]) * (X[i, r] - R[i, r]), axis=r), name="Y")

    def make(rng, dist):
        from leka.tasks.task import generate

        q, _ = np.linalg.qr(rng.standard_normal((d, k)))
        return [generate(In("X", (b, d)), rng, dist), q.astype(np.float32)]

    def ref(x, v):
        return ((x - (x @ v) @ v.T) ** 2).sum(1)

    return make_task(
        pattern="pca_reconstruction_error",
        tag=f"{b}x{d}x{k}",
        level=2,
        domain=D,
        ins=[In("X", (b, d)), In("V", (d, k))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * b * d * k + 3 * b * d,
        desc=f"PCA subspace residual ||x - V Vᵀ x||², {k} of {d} components, {b} vectors ({src})",
        make_inputs=make,
    )


def rbf_ocsvm(b: int, d: int, s: int, src: str) -> Task:
    gamma = 1.0 / d

    def te_fn(X, Sv, A):
        from tvm import te

        r, q = te.reduce_axis((0, d), "j"), te.reduce_axis((0, s), "q")
        D2 = te.compute((b, s), lambda i, c: te.sum((X[i, r] - Sv[c, r]) * (X[i, r] - Sv[c, r]), axis=r), name="d2")
        return te.compute((b,), lambda i: te.sum(A[q] * te.exp(-gamma * D2[i, q]), axis=q), name="Y")

    def ref(x, sv, a):
        d2 = (x * x).sum(1)[:, None] + (sv * sv).sum(1)[None] - 2 * x @ sv.T
        return np.exp(-gamma * d2) @ a

    return make_task(
        pattern="ocsvm_rbf_decision",
        tag=f"{b}x{d}x{s}",
        level=2,
        domain=D,
        ins=[In("X", (b, d)), In("Sv", (s, d)), In("A", (s,), dist="positive")],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=3 * b * s * d + 3 * b * s,
        desc=f"one-class SVM RBF decision Σ αᵢ exp(-γ||x - sᵢ||²), {s} support vectors, {b} x {d} ({src})",
    )


def hbos(b: int, d: int, bins: int, src: str) -> Task:
    lo, hi = -4.0, 4.0

    def te_fn(X, Nl):
        from tvm import te

        r = te.reduce_axis((0, d), "j")
        idx = lambda i, j: te.max(te.min(te.floor((X[i, j] - lo) * (bins / (hi - lo))).astype("int32"), bins - 1), 0)
        return te.compute((b,), lambda i: te.sum(Nl[r, idx(i, r)], axis=r), name="Y")

    def ref(x, nl):
        idx = np.clip(np.floor((x - np.float32(lo)) * np.float32(bins / (hi - lo))).astype(np.int64), 0, bins - 1)
        return nl[np.arange(d)[None, :], idx].sum(1)

    return make_task(
        pattern="hbos_histogram_score",
        tag=f"{b}x{d}x{bins}",
        level=1,
        domain=D,
        ins=[In("X", (b, d)), In("Nl", (d, bins), dist="positive")],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * b * d,
        desc=f"histogram-based outlier score: bin each feature ({bins} bins), sum the bins' -log p table Nl, "
        f"{b} x {d} ({src})",
    )


def vae_head(b: int, z: int, src: str) -> Task:
    def te_fn(Mu, Lv, Eps):
        from tvm import te

        Zs = te.compute((b, z), lambda i, j: Mu[i, j] + te.exp(0.5 * Lv[i, j]) * Eps[i, j], name="Z")
        r = te.reduce_axis((0, z), "j")
        KL = te.compute(
            (b,), lambda i: te.sum(-0.5 * (1.0 + Lv[i, r] - Mu[i, r] * Mu[i, r] - te.exp(Lv[i, r])), axis=r), name="KL"
        )
        return Zs, KL

    return make_task(
        pattern="vae_reparam_kl",
        tag=f"{b}x{z}",
        level=2,
        domain=D,
        ins=[In("Mu", (b, z)), In("Lv", (b, z), low=-3.0, high=2.0), In("Eps", (b, z))],
        outs=[Out("Z", (b, z)), Out("KL", (b,))],
        te_fn=te_fn,
        ref=lambda mu, lv, e: (mu + np.exp(0.5 * lv) * e, (-0.5 * (1 + lv - mu * mu - np.exp(lv))).sum(1)),
        flops=9 * b * z,
        desc=f"VAE reparameterisation z = μ + σε and KL score, {b} x {z} latent ({src})",
    )


def feature_stats(b: int, n: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        a, c, e, f, g = (te.reduce_axis((0, n), nm) for nm in "acefg")
        s1 = te.compute((b,), lambda i: te.sum(X[i, a], axis=a), name="s1")
        mu = te.compute((b,), lambda i: s1[i] * (1.0 / n), name="mu")
        m2 = te.compute((b,), lambda i: te.sum((X[i, c] - mu[i]) * (X[i, c] - mu[i]), axis=c), name="m2")
        m4 = te.compute(
            (b,),
            lambda i: te.sum((X[i, e] - mu[i]) * (X[i, e] - mu[i]) * (X[i, e] - mu[i]) * (X[i, e] - mu[i]), axis=e),
            name="m4",
        )
        mx = te.compute((b,), lambda i: te.max(X[i, f], axis=f), name="mx")
        mn = te.compute((b,), lambda i: te.min(X[i, g], axis=g), name="mn")

        def out(i, k):
            from tvm import tirx

            var = m2[i] * (1.0 / n)
            kurt = m4[i] * (1.0 / n) / (var * var + 1e-12)
            return tirx.Select(
                k == 0,
                mu[i],
                tirx.Select(
                    k == 1,
                    te.sqrt(var),
                    tirx.Select(
                        k == 2, kurt, tirx.Select(k == 3, mx[i] - mn[i], te.sqrt(mx[i] * mx[i] + mn[i] * mn[i]))
                    ),
                ),
            )

        return te.compute((b, 5), out, name="Y")

    def ref(x):
        mu = x.mean(1)
        d = x - mu[:, None]
        var = (d * d).mean(1)
        return np.stack(
            [
                mu,
                np.sqrt(var),
                (d**4).mean(1) / (var * var + 1e-12),
                x.max(1) - x.min(1),
                np.sqrt(x.max(1) ** 2 + x.min(1) ** 2),
            ],
            1,
        )

    return make_task(
        pattern="window_feature_stats",
        tag=f"{b}x{n}",
        level=1,
        domain=D,
        ins=[In("X", (b, n))],
        outs=[Out("Y", (b, 5))],
        te_fn=te_fn,
        ref=ref,
        flops=10 * b * n,
        rtol=1e-3,
        desc=f"per-window mean, std, kurtosis, range, peak magnitude (vibration features), {b} windows of {n} "
        f"({src}; rtol 1e-3: 4th moment)",
    )


def memory_bank_cosine(b: int, m: int, d: int, src: str) -> Task:
    def te_fn(X, Mb):
        from tvm import te

        a, c, e = te.reduce_axis((0, d), "a"), te.reduce_axis((0, d), "c"), te.reduce_axis((0, d), "e")
        xn = te.compute((b,), lambda i: te.sum(X[i, a] * X[i, a], axis=a), name="xn")
        mn = te.compute((m,), lambda j: te.sum(Mb[j, c] * Mb[j, c], axis=c), name="mn")
        dot = te.compute((b, m), lambda i, j: te.sum(X[i, e] * Mb[j, e], axis=e), name="dot")
        cs = te.compute((b, m), lambda i, j: dot[i, j] * te.rsqrt(xn[i] * mn[j] + 1e-12), name="cos")
        q = te.reduce_axis((0, m), "q")
        mx = te.compute((b,), lambda i: te.max(cs[i, q], axis=q), name="maxcos")
        return te.compute((b,), lambda i: 1.0 - mx[i], name="Y")

    def ref(x, mb):
        cs = (x @ mb.T) / np.sqrt((x * x).sum(1)[:, None] * (mb * mb).sum(1)[None] + 1e-12)
        return 1 - cs.max(1)

    return make_task(
        pattern="memory_bank_cosine_score",
        tag=f"{b}x{m}x{d}",
        level=2,
        domain=D,
        ins=[In("X", (b, d)), In("Mb", (m, d))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=ref,
        flops=2 * b * m * d + 4 * b * m,
        desc=f"1 - max cosine similarity to a {m}-entry normal memory bank (PatchCore-style), {b} x {d} ({src})",
    )


def energy_score(b: int, k: int, src: str) -> Task:
    def te_fn(X):
        from tvm import te

        from ._lib.reduce import logsumexp_lastdim

        L = logsumexp_lastdim(X, name="lse")
        return te.compute((b,), lambda i: -L[i], name="Y")

    return make_task(
        pattern="energy_ood_score",
        tag=f"{b}x{k}",
        level=1,
        domain=D,
        ins=[In("X", (b, k))],
        outs=[Out("Y", (b,))],
        te_fn=te_fn,
        ref=lambda x: -logsumexp_np(x),
        flops=4 * b * k,
        desc=f"free-energy out-of-distribution score -logsumexp(logits), {b} x {k} classes ({src})",
    )


def tasks() -> list[Task]:
    return [
        mahalanobis(256, 64, "PaDiM-lite features"),
        mahalanobis(1024, 16, "multivariate sensor"),
        mahalanobis(256, 64, "PaDiM-lite fp16", "float16"),
        mahalanobis(1024, 32, "sensor fp16", "float16"),
        gaussian_loglik(1024, 32, "sensor density model"),
        gaussian_loglik(309, 128, "log-mel density"),
        gmm_loglik(512, 16, 8, "sensor GMM"),
        gmm_loglik(128, 64, 4, "audio embedding GMM"),
        pca_residual(256, 128, 16, "log-mel PCA"),
        pca_residual(1024, 32, 4, "sensor PCA"),
        rbf_ocsvm(256, 32, 128, "sensor one-class SVM"),
        rbf_ocsvm(64, 128, 256, "audio embedding OC-SVM"),
        hbos(512, 32, 16, "tabular IoT"),
        hbos(1024, 8, 32, "network flow features"),
        vae_head(64, 8, AD + " VAE variant"),
        vae_head(256, 16, "sensor VAE"),
        feature_stats(64, 1024, "bearing vibration windows"),
        feature_stats(256, 128, "accelerometer windows"),
        memory_bank_cosine(64, 1024, 128, "embedding memory bank"),
        memory_bank_cosine(16, 2048, 256, "PatchCore-lite"),
        energy_score(256, 10, "CIFAR-10 classifier logits"),
        energy_score(64, 1000, "ImageNet-class logits"),
    ]
