"""Robotics map, localisation and kinematics kernels (L1 + L2): bilinear costmap lookup, correlative
scan-matching score, particle-filter weights, track-detection gating costs, DH forward kinematics.
"""

from __future__ import annotations

import numpy as np

from leka.tasks.task import Task

from ._lib.linalg import In, Out, make_task

D = "robotics"


def _bilinear_te(G, gh: int, gw: int, x, y):
    """Bilinear sample of grid G at continuous cell coordinates (x, y), clamped to the border."""
    from tvm import te

    xc = te.max(te.min(x, float(gw - 1.001)), 0.0)
    yc = te.max(te.min(y, float(gh - 1.001)), 0.0)
    x0, y0 = te.floor(xc).astype("int32"), te.floor(yc).astype("int32")
    fx, fy = xc - x0.astype("float32"), yc - y0.astype("float32")
    return (1.0 - fy) * ((1.0 - fx) * G[y0, x0] + fx * G[y0, x0 + 1]) + fy * (
        (1.0 - fx) * G[y0 + 1, x0] + fx * G[y0 + 1, x0 + 1]
    )


def _bilinear_np(g, x, y):
    gh, gw = g.shape
    xc = np.clip(x, 0.0, np.float32(gw - 1.001)).astype(np.float32)
    yc = np.clip(y, 0.0, np.float32(gh - 1.001)).astype(np.float32)
    x0, y0 = np.floor(xc).astype(np.int64), np.floor(yc).astype(np.int64)
    fx, fy = xc - x0, yc - y0
    return (1 - fy) * ((1 - fx) * g[y0, x0] + fx * g[y0, x0 + 1]) + fy * (
        (1 - fx) * g[y0 + 1, x0] + fx * g[y0 + 1, x0 + 1]
    )


def costmap_lookup(n: int, gh: int, gw: int, src: str) -> Task:
    def te_fn(G, P):
        from tvm import te

        return te.compute((n,), lambda i: _bilinear_te(G, gh, gw, P[i, 0], P[i, 1]), name="Y")

    def make(rng, dist):
        from leka.tasks.task import generate

        pts = np.stack([rng.uniform(0, gw - 1, n), rng.uniform(0, gh - 1, n)], 1)
        return [generate(In("G", (gh, gw)), rng, dist), pts.astype(np.float32)]

    return make_task(
        pattern="costmap_bilinear_lookup",
        tag=f"{n}x{gh}x{gw}",
        level=1,
        domain=D,
        ins=[In("G", (gh, gw)), In("P", (n, 2))],
        outs=[Out("Y", (n,))],
        te_fn=te_fn,
        ref=lambda g, p: _bilinear_np(g, p[:, 0], p[:, 1]),
        flops=12 * n,
        desc=f"bilinear costmap/ESDF lookup at {n} continuous cell coordinates, {gh}x{gw} grid ({src})",
        make_inputs=make,
    )


def scan_match(poses: int, n: int, gh: int, gw: int, src: str) -> Task:
    def te_fn(G, S, Pz):
        from tvm import te

        r = te.reduce_axis((0, n), "i")

        def f(p):
            c, s = te.cos(Pz[p, 2]), te.sin(Pz[p, 2])
            x = c * S[r, 0] - s * S[r, 1] + Pz[p, 0]
            y = s * S[r, 0] + c * S[r, 1] + Pz[p, 1]
            return te.sum(_bilinear_te(G, gh, gw, x, y), axis=r)

        return te.compute((poses,), f, name="Y")

    def make(rng, dist):
        from leka.tasks.task import generate

        ang = rng.uniform(-np.pi, np.pi, n)
        rad = rng.uniform(2, min(gh, gw) / 3, n)
        scan = np.stack([rad * np.cos(ang), rad * np.sin(ang)], 1)
        pz = np.stack(
            [
                rng.uniform(gw * 0.4, gw * 0.6, poses),
                rng.uniform(gh * 0.4, gh * 0.6, poses),
                rng.uniform(-0.3, 0.3, poses),
            ],
            1,
        )
        return [generate(In("G", (gh, gw)), rng, dist), scan.astype(np.float32), pz.astype(np.float32)]

    def ref(g, s, pz):
        c, sn = np.cos(pz[:, 2])[:, None], np.sin(pz[:, 2])[:, None]
        x = c * s[None, :, 0] - sn * s[None, :, 1] + pz[:, 0:1]
        y = sn * s[None, :, 0] + c * s[None, :, 1] + pz[:, 1:2]
        return _bilinear_np(g, x, y).sum(1)

    return make_task(
        pattern="correlative_scan_match_score",
        tag=f"{poses}x{n}x{gh}",
        level=2,
        domain=D,
        ins=[In("G", (gh, gw)), In("S", (n, 2)), In("Pz", (poses, 3))],
        outs=[Out("Y", (poses,))],
        te_fn=te_fn,
        ref=ref,
        flops=poses * n * 20,
        rtol=1e-3,
        desc=f"score {poses} candidate poses: rotate+translate {n} scan points, bilinear grid lookup, sum "
        f"({src}; rtol 1e-3: in-kernel sin/cos)",
        make_inputs=make,
    )


def particle_weights(p: int, beams: int, src: str) -> Task:
    sigma = 0.2

    def te_fn(Z, Zh, Lw):
        from tvm import te

        r = te.reduce_axis((0, beams), "b")
        se = te.compute((p,), lambda i: te.sum((Z[r] - Zh[i, r]) * (Z[r] - Zh[i, r]), axis=r), name="sqerr")
        from ._lib.reduce import softmax_lastdim

        L2 = te.compute((1, p), lambda _, i: Lw[i] - (0.5 / sigma**2) * se[i], name="loglik")
        W = softmax_lastdim(L2, name="W")
        return te.compute((p,), lambda i: W[0, i], name="Y")

    def ref(z, zh, lw):
        ll = lw - 0.5 / sigma**2 * ((z[None] - zh) ** 2).sum(1)
        e = np.exp(ll - ll.max())
        return e / e.sum()

    def make(rng, dist):
        z = rng.uniform(0.5, 8.0, beams)
        zh = z[None] + rng.normal(0, 0.15, (p, beams))
        return [z.astype(np.float32), zh.astype(np.float32), rng.uniform(-1, 0, p).astype(np.float32)]

    return make_task(
        pattern="particle_filter_weights",
        tag=f"{p}x{beams}",
        level=2,
        domain=D,
        ins=[In("Z", (beams,)), In("Zh", (p, beams)), In("Lw", (p,))],
        outs=[Out("Y", (p,))],
        te_fn=te_fn,
        ref=ref,
        flops=4 * p * beams + 5 * p,
        desc=f"MCL weight update: Gaussian range likelihood of {beams} beams for {p} particles, normalised ({src})",
        make_inputs=make,
    )


def gating_cost(tracks: int, dets: int, src: str) -> Task:
    def te_fn(Tp, Si, Dp):
        from tvm import te

        def f(i, j):
            dx, dy = Dp[j, 0] - Tp[i, 0], Dp[j, 1] - Tp[i, 1]
            return dx * (Si[i, 0, 0] * dx + Si[i, 0, 1] * dy) + dy * (Si[i, 1, 0] * dx + Si[i, 1, 1] * dy)

        return te.compute((tracks, dets), f, name="Y")

    def make(rng, dist):
        m = rng.standard_normal((tracks, 2, 2))
        si = m @ m.transpose(0, 2, 1) + np.eye(2)
        return [
            rng.uniform(0, 50, (tracks, 2)).astype(np.float32),
            si.astype(np.float32),
            rng.uniform(0, 50, (dets, 2)).astype(np.float32),
        ]

    return make_task(
        pattern="track_gating_mahalanobis",
        tag=f"{tracks}x{dets}",
        level=2,
        domain=D,
        ins=[In("Tp", (tracks, 2)), In("Si", (tracks, 2, 2)), In("Dp", (dets, 2))],
        outs=[Out("Y", (tracks, dets))],
        te_fn=te_fn,
        ref=lambda tp, si, dp: np.einsum("tdi,tij,tdj->td", dp[None] - tp[:, None], si, dp[None] - tp[:, None]),
        flops=10 * tracks * dets,
        desc=f"data-association cost: innovation Mahalanobis distance with per-track S⁻¹, {tracks} tracks x "
        f"{dets} detections ({src})",
        make_inputs=make,
    )


def _compose(acc, A, r):
    from tvm import te

    return lambda h, i, j: te.sum(acc[h, i, r] * A[h, r, j], axis=r)


def dh_forward_kinematics(b: int, joints: int, src: str) -> Task:
    rng = np.random.default_rng(joints)
    dh = np.stack(
        [rng.uniform(0.05, 0.4, joints), rng.uniform(-np.pi / 2, np.pi / 2, joints), rng.uniform(0, 0.3, joints)], 1
    )

    def te_fn(Q):
        from tvm import te, tirx

        def link(k):  # standard DH: Rz(q) Tz(d) Tx(a) Rx(alpha)
            a, al, d = (float(v) for v in dh[k])
            ca, sa = float(np.cos(al)), float(np.sin(al))

            def m(h, r, c):
                ct, st = te.cos(Q[h, k]), te.sin(Q[h, k])
                rows = [
                    [ct, -st * ca, st * sa, a * ct],
                    [st, ct * ca, -ct * sa, a * st],
                    [0.0, sa, ca, d],
                    [0.0, 0.0, 0.0, 1.0],
                ]
                out = tirx.const(1.0, "float32")
                for rr in range(4):
                    for cc in range(4):
                        if (rr, cc) != (3, 3):
                            out = tirx.Select(tirx.all(r == rr, c == cc), rows[rr][cc], out)
                return out

            return te.compute((b, 4, 4), m, name=f"A{k}")

        acc = link(0)
        for k in range(1, joints):
            A = link(k)
            r = te.reduce_axis((0, 4), f"r{k}")
            acc = te.compute((b, 4, 4), _compose(acc, A, r), name="Y" if k == joints - 1 else f"T{k}")
        return acc

    def ref(q):
        out = np.tile(np.eye(4, dtype=np.float64), (b, 1, 1))
        for k in range(joints):
            a, al, d = dh[k]
            ct, st = np.cos(q[:, k]), np.sin(q[:, k])
            ca, sa = np.cos(al), np.sin(al)
            A = np.zeros((b, 4, 4))
            A[:, 0] = np.stack([ct, -st * ca, st * sa, a * ct], 1)
            A[:, 1] = np.stack([st, ct * ca, -ct * sa, a * st], 1)
            A[:, 2] = [0, sa, ca, d]
            A[:, 3] = [0, 0, 0, 1]
            out = out @ A
        return out

    return make_task(
        pattern="dh_forward_kinematics",
        tag=f"{joints}dof-{b}",
        level=2,
        domain=D,
        ins=[In("Q", (b, joints), low=-3.0, high=3.0)],
        outs=[Out("Y", (b, 4, 4))],
        te_fn=te_fn,
        ref=ref,
        flops=b * joints * (128 + 20),
        rtol=1e-3,
        desc=f"{joints}-DoF Denavit-Hartenberg forward kinematics (chain of 4x4 link transforms), batch {b} "
        f"({src}; rtol 1e-3: fp32 chain of sin/cos)",
    )


def tasks() -> list[Task]:
    return [
        costmap_lookup(4096, 200, 200, "nav2 costmap 10 m @5 cm, trajectory rollouts"),
        costmap_lookup(1024, 128, 128, "ESDF queries"),
        scan_match(64, 360, 128, 128, "RPLidar correlative matcher"),
        scan_match(16, 1081, 256, 256, "Hokuyo local search"),
        particle_weights(2048, 60, "AMCL 60 beams"),
        particle_weights(500, 180, "MCL 180 beams"),
        gating_cost(64, 128, "multi-object tracker"),
        gating_cost(256, 256, "radar tracker"),
        dh_forward_kinematics(256, 6, "6-DoF arm, IK sampling batch"),
        dh_forward_kinematics(64, 7, "7-DoF arm"),
    ]
