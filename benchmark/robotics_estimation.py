"""Robotics state-estimation kernels (L1 + L2): EKF covariance prediction, scalar-measurement Kalman
update, Gauss-Newton normal equations, ICP cross-covariance and point-to-plane residuals.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task

D = "robotics"


def ekf_predict(n: int, src: str) -> Task:
    def te_fn(F, P, Q):
        from tvm import te

        a, b = te.reduce_axis((0, n), "a"), te.reduce_axis((0, n), "b")
        FP = te.compute((n, n), lambda i, j: te.sum(F[i, a] * P[a, j], axis=a), name="FP")
        FPF = te.compute((n, n), lambda i, j: te.sum(FP[i, b] * F[j, b], axis=b), name="FPFt")
        return te.compute((n, n), lambda i, j: FPF[i, j] + Q[i, j], name="Y")

    return make_task(
        pattern="ekf_predict_cov",
        tag=f"{n}",
        level=2,
        domain=D,
        ins=[In("F", (n, n)), In("P", (n, n)), In("Q", (n, n))],
        outs=[Out("Y", (n, n))],
        te_fn=te_fn,
        ref=lambda f, p, q: f @ p @ f.T + q,
        flops=4 * n**3 + n * n,
        desc=f"EKF covariance prediction F P Fᵀ + Q, {n}-state ({src})",
    )


def kalman_scalar_update(n: int, src: str) -> Task:
    def te_fn(x, P, H, z, R):
        from tvm import te

        a, b, c = (te.reduce_axis((0, n), nm) for nm in "abc")
        PH = te.compute((n,), lambda i: te.sum(P[i, a] * H[a], axis=a), name="PHt")
        S = te.compute((1,), lambda _: te.sum(H[b] * PH[b], axis=b), name="HPHt")
        hx = te.compute((1,), lambda _: te.sum(H[c] * x[c], axis=c), name="Hx")
        K = te.compute((n,), lambda i: PH[i] / (S[0] + R[0]), name="K")
        X2 = te.compute((n,), lambda i: x[i] + K[i] * (z[0] - hx[0]), name="x_out")
        P2 = te.compute((n, n), lambda i, j: P[i, j] - K[i] * PH[j], name="P_out")
        return X2, P2

    def make(rng, dist):
        m = rng.standard_normal((n, n))
        return [
            rng.standard_normal(n).astype(np.float32),
            (m @ m.T / n + np.eye(n)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(1).astype(np.float32),
            rng.uniform(0.1, 1.0, 1).astype(np.float32),
        ]

    def ref(x, p, h, z, r):
        ph = p @ h
        k = ph / (h @ ph + r[0])
        return x + k * (z[0] - h @ x), p - np.outer(k, ph)

    return make_task(
        pattern="kalman_scalar_update",
        tag=f"{n}",
        level=2,
        domain=D,
        ins=[In("x", (n,)), In("P", (n, n)), In("H", (n,)), In("z", (1,)), In("R", (1,))],
        outs=[Out("x_out", (n,)), Out("P_out", (n, n))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * n * n + 6 * n,
        desc=f"Kalman update for one scalar measurement (gain, state, covariance), {n}-state ({src})",
        make_inputs=make,
    )


def normal_equations(m: int, k: int, src: str) -> Task:
    def te_fn(J, r):
        from tvm import te

        a, b = te.reduce_axis((0, m), "a"), te.reduce_axis((0, m), "b")
        H = te.compute((k, k), lambda i, j: te.sum(J[a, i] * J[a, j], axis=a), name="H")
        g = te.compute((k,), lambda i: te.sum(J[b, i] * r[b], axis=b), name="g")
        return H, g

    return make_task(
        pattern="gauss_newton_normal_eq",
        tag=f"{m}x{k}",
        level=2,
        domain=D,
        ins=[In("J", (m, k)), In("r", (m,))],
        outs=[Out("H", (k, k)), Out("g", (k,))],
        te_fn=te_fn,
        ref=lambda j, r: (j.T @ j, j.T @ r),
        flops=2 * m * k * (k + 1),
        desc=f"Gauss-Newton normal equations JᵀJ and Jᵀr, {m} residuals x {k} params ({src})",
    )


def icp_cross_cov(n: int, src: str) -> Task:
    def te_fn(P, Q):
        from tvm import te

        a, b, c = (te.reduce_axis((0, n), nm) for nm in "abc")
        mp = te.compute((3,), lambda j: te.sum(P[a, j], axis=a), name="sp")
        mq = te.compute((3,), lambda j: te.sum(Q[b, j], axis=b), name="sq")
        return te.compute(
            (3, 3), lambda i, j: te.sum((P[c, i] - mp[i] * (1.0 / n)) * (Q[c, j] - mq[j] * (1.0 / n)), axis=c), name="Y"
        )

    return make_task(
        pattern="icp_cross_covariance",
        tag=f"{n}",
        level=1,
        domain=D,
        ins=[In("P", (n, 3)), In("Q", (n, 3))],
        outs=[Out("Y", (3, 3))],
        te_fn=te_fn,
        ref=lambda p, q: (p - p.mean(0)).T @ (q - q.mean(0)),
        flops=24 * n,
        desc=f"ICP/Kabsch cross-covariance Σ (p-p̄)(q-q̄)ᵀ over {n} correspondences ({src})",
    )


def point_to_plane(n: int, src: str) -> Task:
    def te_fn(P, Q, Nn, R, t):
        from tvm import te

        TP = te.compute(
            (n, 3), lambda i, j: R[j, 0] * P[i, 0] + R[j, 1] * P[i, 1] + R[j, 2] * P[i, 2] + t[j], name="tp"
        )
        r = te.reduce_axis((0, 3), "k")
        return te.compute((n,), lambda i: te.sum((TP[i, r] - Q[i, r]) * Nn[i, r], axis=r), name="Y")

    return make_task(
        pattern="icp_point_to_plane_residual",
        tag=f"{n}",
        level=2,
        domain=D,
        ins=[In("P", (n, 3)), In("Q", (n, 3)), In("Nn", (n, 3)), In("R", (3, 3)), In("t", (3,))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda p, q, nn, r, t: ((p @ r.T + t - q) * nn).sum(1),
        flops=24 * n,
        desc=f"transform source points + point-to-plane residuals, {n} correspondences ({src})",
    )


def tasks() -> list[Task]:
    return [
        ekf_predict(15, "VIO error-state EKF"),
        ekf_predict(64, "EKF-SLAM with 29 landmarks"),
        kalman_scalar_update(15, "VIO EKF, one range"),
        kalman_scalar_update(64, "EKF-SLAM bearing update"),
        normal_equations(2048, 6, "pose-only Gauss-Newton"),
        normal_equations(512, 15, "IMU preintegration residuals"),
        icp_cross_cov(8192, "point-to-point ICP"),
        icp_cross_cov(1024, "Kabsch on keypoints"),
        point_to_plane(8192, "point-to-plane ICP"),
        point_to_plane(2048, "KinectFusion-lite"),
    ]
