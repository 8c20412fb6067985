"""Robotics point-cloud and map kernels (L1 + L2): pairwise distances, nearest-neighbour distance,
Chamfer distance, farthest-point-sampling update, ball-query grouping by index gather, PointNet
shared MLP + max-pool, occupancy-grid log-odds update, binary-descriptor Hamming matching.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task, matmul

D = "robotics"


def _sqd(A, B, n, m, name):
    from tvm import te

    r = te.reduce_axis((0, 3), "k" + name)
    return te.compute((n, m), lambda i, j: te.sum((A[i, r] - B[j, r]) * (A[i, r] - B[j, r]), axis=r), name=name)


def _sqd_np(a, b):
    """Per-coordinate accumulation (same order as the TE definition, no [n, m, 3] temporary)."""
    return sum((a[..., :, None, k] - b[..., None, :, k]) ** 2 for k in range(3))


def pairwise(n: int, m: int, src: str, dtype: str = "float32") -> Task:
    def te_fn(A, B):
        from tvm import te

        if dtype == "float32":
            return _sqd(A, B, n, m, "Y")
        Af = te.compute((n, 3), lambda i, j: A[i, j].astype("float32"), name="a32")
        Bf = te.compute((m, 3), lambda i, j: B[i, j].astype("float32"), name="b32")
        S = _sqd(Af, Bf, n, m, "d32")
        return te.compute((n, m), lambda i, j: S[i, j].astype(dtype), name="Y")

    return make_task(
        pattern="pairwise_sqdist_3d",
        tag=f"{n}x{m}",
        level=1,
        domain=D,
        ins=[In("A", (n, 3), dtype), In("B", (m, 3), dtype)],
        outs=[Out("Y", (n, m), dtype)],
        te_fn=te_fn,
        ref=_sqd_np,
        flops=8 * n * m,
        desc=f"squared distances between {n} and {m} 3-D points (kNN distance matrix) ({src})",
    )


def nn_distance(n: int, m: int, src: str) -> Task:
    def te_fn(A, B):
        from tvm import te

        Dm = _sqd(A, B, n, m, "dist")
        j = te.reduce_axis((0, m), "j")
        return te.compute((n,), lambda i: te.min(Dm[i, j], axis=j), name="Y")

    return make_task(
        pattern="nearest_neighbour_dist",
        tag=f"{n}x{m}",
        level=2,
        domain=D,
        ins=[In("A", (n, 3)), In("B", (m, 3))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda a, b: _sqd_np(a, b).min(1),
        flops=9 * n * m,
        desc=f"nearest-neighbour squared distance from {n} query to {m} map points ({src})",
    )


def chamfer(bsz: int, n: int, m: int, src: str) -> Task:
    def te_fn(A, B):
        from tvm import te

        r = te.reduce_axis((0, 3), "k")
        Dm = te.compute(
            (bsz, n, m),
            lambda b, i, j: te.sum((A[b, i, r] - B[b, j, r]) * (A[b, i, r] - B[b, j, r]), axis=r),
            name="dist",
        )
        j, i2 = te.reduce_axis((0, m), "j"), te.reduce_axis((0, n), "i2")
        min_ab = te.compute((bsz, n), lambda b, i: te.min(Dm[b, i, j], axis=j), name="min_ab")
        min_ba = te.compute((bsz, m), lambda b, jj: te.min(Dm[b, i2, jj], axis=i2), name="min_ba")
        a, c = te.reduce_axis((0, n), "a"), te.reduce_axis((0, m), "c")
        sa = te.compute((bsz,), lambda b: te.sum(min_ab[b, a], axis=a), name="sum_a")
        sb = te.compute((bsz,), lambda b: te.sum(min_ba[b, c], axis=c), name="sum_b")
        return te.compute((bsz,), lambda b: sa[b] * (1.0 / n) + sb[b] * (1.0 / m), name="Y")

    def ref(a, b):
        d = _sqd_np(a, b)
        return d.min(2).mean(1) + d.min(1).mean(1)

    return make_task(
        pattern="chamfer_distance",
        tag=f"{bsz}x{n}x{m}",
        level=2,
        domain=D,
        ins=[In("A", (bsz, n, 3)), In("B", (bsz, m, 3))],
        outs=[Out("Y", (bsz,))],
        te_fn=te_fn,
        ref=ref,
        flops=9 * bsz * n * m,
        desc=f"symmetric Chamfer distance for {bsz} cloud pairs of {n} and {m} points ({src})",
    )


def fps_update(n: int, src: str) -> Task:
    def te_fn(P, Dst, Idx):
        from tvm import te

        r = te.reduce_axis((0, 3), "k")
        d = te.compute((n,), lambda i: te.sum((P[i, r] - P[Idx[0], r]) * (P[i, r] - P[Idx[0], r]), axis=r), name="d")
        return te.compute((n,), lambda i: te.min(Dst[i], d[i]), name="Y")

    return make_task(
        pattern="fps_distance_update",
        tag=f"{n}",
        level=1,
        domain=D,
        ins=[In("P", (n, 3)), In("Dst", (n,), dist="positive"), In("Idx", (1,), "int32", low=0, high=n)],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda p, d, i: np.minimum(d, ((p - p[i[0]]) ** 2).sum(1)),
        flops=9 * n,
        desc=f"farthest-point-sampling step: min-distance update to the newest centre, {n} points ({src})",
    )


def ball_group(s: int, k: int, n: int, src: str) -> Task:
    def te_fn(P, C, G):
        from tvm import te

        return te.compute((s, k, 3), lambda i, j, c: P[G[i, j], c] - P[C[i], c], name="Y")

    return make_task(
        pattern="ball_query_group_relative",
        tag=f"{s}x{k}x{n}",
        level=1,
        domain=D,
        ins=[In("P", (n, 3)), In("C", (s,), "int32", low=0, high=n), In("G", (s, k), "int32", low=0, high=n)],
        outs=[Out("Y", (s, k, 3))],
        te_fn=te_fn,
        ref=lambda p, c, g: p[g] - p[c][:, None, :],
        flops=s * k * 3,
        desc=f"ball-query grouping via precomputed neighbour indices, centred coordinates, {s} centres x {k} ({src})",
    )


def pointnet_mlp_maxpool(n: int, dims: tuple[int, ...], src: str) -> Task:
    ins = [In("X", (n, dims[0]))]
    for li in range(len(dims) - 1):
        ins += [In(f"W{li}", (dims[li], dims[li + 1])), In(f"B{li}", (dims[li + 1],))]

    def te_fn(X, *wb):
        from tvm import te

        h = X
        for li in range(len(dims) - 1):
            lin = matmul(h, wb[2 * li], bias=wb[2 * li + 1], name=f"fc{li}")
            h = te.compute(tuple(lin.shape), _relu_of(lin), name=f"relu{li}")
        r = te.reduce_axis((0, n), "p")
        return te.compute((dims[-1],), lambda j: te.max(h[r, j], axis=r), name="Y")

    def ref(x, *wb):
        h = x
        for li in range(len(dims) - 1):
            h = np.maximum(h @ wb[2 * li] + wb[2 * li + 1], 0)
        return h.max(0)

    fl = sum(2 * n * a * b for a, b in zip(dims[:-1], dims[1:], strict=True))
    return make_task(
        pattern=f"pointnet_mlp{len(dims) - 1}_maxpool",
        tag=f"{n}x" + "-".join(map(str, dims)),
        level=2,
        domain=D,
        ins=ins,
        outs=[Out("Y", (dims[-1],))],
        te_fn=te_fn,
        ref=ref,
        flops=fl,
        desc=f"PointNet shared MLP {'->'.join(map(str, dims))} (ReLU) + global max-pool over {n} points ({src})",
    )


def _relu_of(t):
    from tvm import te

    return lambda i, j: te.max(t[i, j], 0.0)


def occupancy_update(h: int, w: int, src: str) -> Task:
    lo, lf, cmax = 0.85, -0.4, 3.5

    def te_fn(L, Hm, Mm):
        from tvm import te

        return te.compute(
            (h, w),
            lambda y, x: te.max(
                te.min(L[y, x] + Hm[y, x].astype("float32") * lo + Mm[y, x].astype("float32") * lf, cmax), -cmax
            ),
            name="Y",
        )

    return make_task(
        pattern="occupancy_logodds_update",
        tag=f"{h}x{w}",
        level=1,
        domain=D,
        ins=[In("L", (h, w)), In("Hm", (h, w), "uint8", low=0, high=2), In("Mm", (h, w), "uint8", low=0, high=2)],
        outs=[Out("Y", (h, w))],
        te_fn=te_fn,
        ref=lambda l, hm, mm: np.clip(l + hm * np.float32(lo) + mm * np.float32(lf), -cmax, cmax),
        flops=5 * h * w,
        desc=f"occupancy grid log-odds update from hit/miss masks with clamping, {h}x{w} ({src})",
    )


def hamming_matrix(n: int, m: int, nbytes: int, src: str) -> Task:
    def te_fn(A, B):
        from tvm import te, tirx

        r = te.reduce_axis((0, nbytes), "k")
        return te.compute(
            (n, m), lambda i, j: te.sum(tirx.popcount(A[i, r] ^ B[j, r]).astype("int32"), axis=r), name="Y"
        )

    def ref(a, b):
        wa, wb = a.view(np.uint64), b.view(np.uint64)  # 8 descriptor bytes per word
        return sum(np.bitwise_count(wa[:, None, k] ^ wb[None, :, k]).astype(np.int32) for k in range(nbytes // 8))

    return make_task(
        pattern="hamming_distance_matrix",
        tag=f"{n}x{m}x{nbytes}",
        level=1,
        domain=D,
        dtype="uint8",
        ins=[In("A", (n, nbytes), "uint8", low=0, high=256), In("B", (m, nbytes), "uint8", low=0, high=256)],
        outs=[Out("Y", (n, m), "int32")],
        te_fn=te_fn,
        ref=ref,
        flops=2 * n * m * nbytes,
        desc=f"Hamming distances between {n} and {m} {nbytes * 8}-bit binary descriptors (XOR + popcount) ({src})",
    )


def tasks() -> list[Task]:
    return [
        pairwise(1024, 1024, "kNN on 1024 points"),
        pairwise(512, 2048, "PointNet++ SA1 centres vs points"),
        pairwise(1024, 1024, "kNN fp16", "float16"),
        pairwise(256, 4096, "fp16 query vs map", "float16"),
        nn_distance(1024, 2048, "scan-to-map NN"),
        nn_distance(512, 512, "frame-to-frame NN"),
        chamfer(4, 512, 512, "point-cloud completion loss, batch 4"),
        chamfer(2, 256, 2048, "scan-to-submap alignment check"),
        fps_update(1024, "PointNet++ FPS 1024->512"),
        fps_update(8192, "lidar FPS"),
        ball_group(512, 32, 1024, "PointNet++ SA1 r=0.2"),
        ball_group(128, 64, 512, "PointNet++ SA2 r=0.4"),
        pointnet_mlp_maxpool(512, (3, 64, 64, 128), "PointNet++ SA1 MLP"),
        pointnet_mlp_maxpool(256, (3, 64, 128, 256), "PointNet-lite"),
        occupancy_update(256, 256, "5 cm grid 12.8 m"),
        occupancy_update(512, 512, "10 cm grid 51 m"),
        hamming_matrix(500, 500, 32, "ORB-SLAM 256-bit matching"),
        hamming_matrix(1000, 250, 32, "ORB to local map"),
    ]
