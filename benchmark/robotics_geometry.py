"""Robotics geometry kernels (L1 + L2): rigid transforms, quaternion -> matrix and products, batched
small matmuls, 3x3 inverse, Rodrigues, homography, camera projection, laser scans, depth back-projection.
Point clouds are [N, 3] row-major; batches of small matrices are [B, r, c].
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task

D = "robotics"


def rigid_transform(n: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(P, R, t):
        from tvm import te

        f = lambda v: v.astype("float32") if dtype != "float32" else v
        r = te.reduce_axis((0, 3), "k")
        S = te.compute((n, 3), lambda i, j: te.sum(f(P[i, r]) * f(R[j, r]), axis=r), name="rot")
        return te.compute((n, 3), lambda i, j: (S[i, j] + f(t[j])).astype(dtype), name="Y")

    return make_task(
        pattern="rigid_transform_points",
        tag=f"{n}",
        level=1,
        domain=D,
        layout="[N,3]",
        ins=[In("P", (n, 3), dtype, dist="uniform"), In("R", (3, 3), dtype), In("t", (3,), dtype)],
        outs=[Out("Y", (n, 3), dtype)],
        te_fn=te_fn,
        ref=lambda p, r, t: p @ r.T + t,
        flops=18 * n,
        desc=f"p' = R p + t on {n} points ({src})",
    )


def quat_to_rotmat(b: int, src: str) -> Task:
    def te_fn(Q):
        from tvm import te, tirx

        def f(i, r, c):
            w, x, y, z = Q[i, 0], Q[i, 1], Q[i, 2], Q[i, 3]
            n2 = 2.0 / (w * w + x * x + y * y + z * z)
            m = [
                [1 - n2 * (y * y + z * z), n2 * (x * y - z * w), n2 * (x * z + y * w)],
                [n2 * (x * y + z * w), 1 - n2 * (x * x + z * z), n2 * (y * z - x * w)],
                [n2 * (x * z - y * w), n2 * (y * z + x * w), 1 - n2 * (x * x + y * y)],
            ]
            out = m[2][2]
            for rr in range(3):
                for cc in range(3):
                    if (rr, cc) != (2, 2):
                        out = tirx.Select(tirx.all(r == rr, c == cc), m[rr][cc], out)
            return out

        return te.compute((b, 3, 3), f, name="Y")

    def ref(q):
        w, x, y, z = q.T
        n2 = 2.0 / (q * q).sum(1)
        return np.stack(
            [
                1 - n2 * (y * y + z * z),
                n2 * (x * y - z * w),
                n2 * (x * z + y * w),
                n2 * (x * y + z * w),
                1 - n2 * (x * x + z * z),
                n2 * (y * z - x * w),
                n2 * (x * z - y * w),
                n2 * (y * z + x * w),
                1 - n2 * (x * x + y * y),
            ],
            1,
        ).reshape(b, 3, 3)

    return make_task(
        pattern="quat_to_rotmat",
        tag=f"{b}",
        level=1,
        domain=D,
        ins=[In("Q", (b, 4))],
        outs=[Out("Y", (b, 3, 3))],
        te_fn=te_fn,
        ref=ref,
        flops=30 * b,
        desc=f"unit-normalising quaternion (w,x,y,z) -> 3x3 rotation, batch {b} ({src})",
    )


def quat_multiply(b: int, src: str) -> Task:
    def te_fn(A, B):
        from tvm import te, tirx

        def f(i, k):
            a0, a1, a2, a3 = (A[i, j] for j in range(4))
            b0, b1, b2, b3 = (B[i, j] for j in range(4))
            comps = [
                a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
                a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
                a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0,
            ]
            return tirx.Select(k == 0, comps[0], tirx.Select(k == 1, comps[1], tirx.Select(k == 2, comps[2], comps[3])))

        return te.compute((b, 4), f, name="Y")

    def ref(a, q):
        a0, a1, a2, a3 = a.T
        b0, b1, b2, b3 = q.T
        return np.stack(
            [
                a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
                a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
                a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0,
            ],
            1,
        )

    return make_task(
        pattern="quat_multiply",
        tag=f"{b}",
        level=1,
        domain=D,
        ins=[In("A", (b, 4)), In("B", (b, 4))],
        outs=[Out("Y", (b, 4))],
        te_fn=te_fn,
        ref=ref,
        flops=28 * b,
        desc=f"Hamilton product, batch {b} ({src})",
    )


def batched_small_matmul(b: int, n: int, src: str) -> Task:
    def te_fn(A, B):
        from tvm import te

        r = te.reduce_axis((0, n), "k")
        return te.compute((b, n, n), lambda h, i, j: te.sum(A[h, i, r] * B[h, r, j], axis=r), name="Y")

    return make_task(
        pattern="batched_small_matmul",
        tag=f"{b}x{n}x{n}",
        level=1,
        domain=D,
        ins=[In("A", (b, n, n)), In("B", (b, n, n))],
        outs=[Out("Y", (b, n, n))],
        te_fn=te_fn,
        ref=lambda a, q: a @ q,
        flops=2 * b * n**3,
        desc=f"batched {n}x{n} matmul ({'rotation' if n == 3 else 'SE(3) pose'} composition), batch {b} ({src})",
    )


def inv3x3(b: int, src: str) -> Task:
    def te_fn(A):
        from tvm import te, tirx

        def f(h, i, j):
            m = lambda r, c: A[h, r, c]
            cof = lambda r, c: (
                m((r + 1) % 3, (c + 1) % 3) * m((r + 2) % 3, (c + 2) % 3)
                - m((r + 1) % 3, (c + 2) % 3) * m((r + 2) % 3, (c + 1) % 3)
            )
            det = m(0, 0) * cof(0, 0) + m(0, 1) * cof(0, 1) + m(0, 2) * cof(0, 2)
            out = cof(2, 2)
            for r in range(3):
                for c in range(3):
                    if (r, c) != (2, 2):
                        out = tirx.Select(tirx.all(i == r, j == c), cof(c, r), out)  # adjugate = cofactorᵀ
            return out / det

        return te.compute((b, 3, 3), f, name="Y")

    def make(rng, dist):  # well-conditioned: identity + small perturbation
        return [(np.eye(3) * 2 + 0.5 * rng.standard_normal((b, 3, 3))).astype(np.float32)]

    return make_task(
        pattern="inverse_3x3_adjugate",
        tag=f"{b}",
        level=1,
        domain=D,
        ins=[In("A", (b, 3, 3))],
        outs=[Out("Y", (b, 3, 3))],
        te_fn=te_fn,
        ref=lambda a: np.linalg.inv(a.astype(np.float64)),
        flops=40 * b,
        rtol=1e-3,
        desc=f"closed-form 3x3 inverse (adjugate / det), batch {b} ({src}; rtol 1e-3: cancellation in det)",
        make_inputs=make,
    )


def rodrigues(b: int, src: str) -> Task:
    def te_fn(W):
        from tvm import te, tirx

        def f(h, i, j):
            x, y, z = W[h, 0], W[h, 1], W[h, 2]
            th = te.sqrt(x * x + y * y + z * z + 1e-12)
            a, c = te.sin(th) / th, (1.0 - te.cos(th)) / (th * th)
            k = [[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]
            v = [x, y, z]
            out = None
            for r in range(3):
                for cc in range(3):
                    val = (
                        (1.0 if r == cc else 0.0)
                        + a * k[r][cc]
                        + c * (v[r] * v[cc] - (th * th - 1e-12 if r == cc else 0.0))
                    )
                    out = val if out is None else tirx.Select(tirx.all(i == r, j == cc), val, out)
            return out

        return te.compute((b, 3, 3), f, name="Y")

    def ref(w):
        th = np.sqrt((w * w).sum(1) + 1e-12)
        a, c = np.sin(th) / th, (1 - np.cos(th)) / th**2
        x, y, z = w.T
        zero = np.zeros_like(x)
        k = np.stack([zero, -z, y, z, zero, -x, -y, x, zero], 1).reshape(-1, 3, 3)
        return np.eye(3) + a[:, None, None] * k + c[:, None, None] * (k @ k)

    return make_task(
        pattern="so3_exp_rodrigues",
        tag=f"{b}",
        level=1,
        domain=D,
        ins=[In("W", (b, 3))],
        outs=[Out("Y", (b, 3, 3))],
        te_fn=te_fn,
        ref=ref,
        flops=40 * b,
        rtol=1e-3,
        desc=f"SO(3) exponential map (Rodrigues) of axis-angle vectors, batch {b} ({src}; rtol 1e-3: sin/θ)",
    )


def homography_warp(n: int, src: str) -> Task:
    def te_fn(P, H):
        from tvm import te

        w = te.compute((n,), lambda i: H[2, 0] * P[i, 0] + H[2, 1] * P[i, 1] + H[2, 2], name="w")
        return te.compute((n, 2), lambda i, j: (H[j, 0] * P[i, 0] + H[j, 1] * P[i, 1] + H[j, 2]) / w[i], name="Y")

    def make(rng, dist):
        h = np.eye(3) + 0.1 * rng.standard_normal((3, 3))
        h[2, :2] *= 0.01
        return [rng.uniform(-1, 1, (n, 2)).astype(np.float32), h.astype(np.float32)]

    def ref(p, h):
        q = p @ h[:, :2].T + h[:, 2]
        return q[:, :2] / q[:, 2:]

    return make_task(
        pattern="homography_warp_points",
        tag=f"{n}",
        level=1,
        domain=D,
        ins=[In("P", (n, 2)), In("H", (3, 3))],
        outs=[Out("Y", (n, 2))],
        te_fn=te_fn,
        ref=ref,
        flops=14 * n,
        desc=f"apply a 3x3 homography to {n} image points with perspective divide ({src})",
        make_inputs=make,
    )


def camera_projection(n: int, src: str) -> Task:
    fx, fy, cx, cy, k1, k2 = 500.0, 500.0, 320.0, 240.0, -0.2, 0.05

    def te_fn(P, R, t):
        from tvm import te

        C = te.compute(
            (n, 3), lambda i, j: R[j, 0] * P[i, 0] + R[j, 1] * P[i, 1] + R[j, 2] * P[i, 2] + t[j], name="cam"
        )

        def f(i, j):
            x, y = C[i, 0] / C[i, 2], C[i, 1] / C[i, 2]
            r2 = x * x + y * y
            d = 1.0 + k1 * r2 + k2 * r2 * r2
            return te.if_then_else(j == 0, fx * x * d + cx, fy * y * d + cy)

        return te.compute((n, 2), f, name="Y")

    def make(rng, dist):
        p = np.concatenate([rng.uniform(-1, 1, (n, 2)), rng.uniform(2, 6, (n, 1))], 1)
        return [p.astype(np.float32), np.eye(3, dtype=np.float32), (0.1 * rng.standard_normal(3)).astype(np.float32)]

    def ref(p, r, t):
        c = p @ r.T + t
        x, y = c[:, 0] / c[:, 2], c[:, 1] / c[:, 2]
        r2 = x * x + y * y
        d = 1 + k1 * r2 + k2 * r2 * r2
        return np.stack([fx * x * d + cx, fy * y * d + cy], 1)

    return make_task(
        pattern="pinhole_project_distort",
        tag=f"{n}",
        level=2,
        domain=D,
        ins=[In("P", (n, 3)), In("R", (3, 3)), In("t", (3,))],
        outs=[Out("Y", (n, 2))],
        te_fn=te_fn,
        ref=ref,
        flops=35 * n,
        desc=f"world->camera transform + pinhole projection + radial distortion, {n} points ({src})",
        make_inputs=make,
    )


def scan_to_points(n: int, src: str) -> Task:
    a0, da = -np.pi * 0.75, 1.5 * np.pi / n

    def te_fn(Rg):
        from tvm import te

        ang = lambda i: a0 + i.astype("float32") * da
        return te.compute(
            (n, 2), lambda i, j: Rg[i] * te.if_then_else(j == 0, te.cos(ang(i)), te.sin(ang(i))), name="Y"
        )

    def ref(r):
        a = a0 + np.arange(n, dtype=np.float32) * np.float32(da)
        return np.stack([r * np.cos(a), r * np.sin(a)], 1)

    return make_task(
        pattern="laser_scan_to_points",
        tag=f"{n}",
        level=1,
        domain=D,
        ins=[In("Rg", (n,), dist="positive")],
        outs=[Out("Y", (n, 2))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * n,
        desc=f"2-D lidar ranges (270° fan, {n} beams) -> Cartesian points ({src})",
    )


def depth_backproject(h: int, w: int, src: str) -> Task:
    fx, fy = 0.9 * w, 0.9 * w
    cx, cy = w / 2, h / 2

    def te_fn(Z):
        from tvm import te

        def f(y, x, c):
            px = (x.astype("float32") - cx) * (1.0 / fx) * Z[y, x]
            py = (y.astype("float32") - cy) * (1.0 / fy) * Z[y, x]
            return te.if_then_else(c == 0, px, te.if_then_else(c == 1, py, Z[y, x]))

        return te.compute((h, w, 3), f, name="Y")

    def ref(z):
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        return np.stack([(xs - cx) * np.float32(1 / fx) * z, (ys - cy) * np.float32(1 / fy) * z, z], -1)

    return make_task(
        pattern="depth_to_pointcloud",
        tag=f"{h}x{w}",
        level=1,
        domain=D,
        ins=[In("Z", (h, w), dist="positive")],
        outs=[Out("Y", (h, w, 3))],
        te_fn=te_fn,
        ref=ref,
        flops=6 * h * w,
        desc=f"back-project a {h}x{w} depth image to 3-D points with pinhole intrinsics ({src})",
    )


def tasks() -> list[Task]:
    return [
        rigid_transform(16384, "lidar sweep (VLP-16 ~16k pts)"),
        rigid_transform(4096, "depth-camera subsample"),
        rigid_transform(16384, "lidar sweep fp16", "float16"),
        rigid_transform(4096, "RGB-D fp16", "float16"),
        quat_to_rotmat(1024, "pose batch"),
        quat_to_rotmat(8192, "particle-filter orientations"),
        quat_multiply(1024, "IMU orientation updates"),
        quat_multiply(8192, "particle orientations"),
        batched_small_matmul(4096, 3, "rotation composition"),
        batched_small_matmul(1024, 4, "SE(3) pose graph edges"),
        inv3x3(4096, "per-point covariance inverse"),
        inv3x3(1024, "NDT cell covariances"),
        rodrigues(4096, "VIO rotation increments"),
        rodrigues(1024, "bundle-adjustment pose updates"),
        homography_warp(8192, "ORB keypoint warp"),
        homography_warp(1000, "ORB-SLAM 1000 features"),
        camera_projection(4096, "visual odometry landmarks"),
        camera_projection(1200, "ORB-SLAM map points"),
        scan_to_points(1081, "Hokuyo UTM-30LX"),
        scan_to_points(360, "RPLidar A1"),
        depth_backproject(120, 160, "QQVGA depth"),
        depth_backproject(240, 320, "QVGA depth"),
    ]
