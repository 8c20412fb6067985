"""L2 fused image pipelines: camera-to-model preprocessing (resize + normalise + layout, NV12,
letterbox, int8 quantisation), lens undistortion, Harris corners, unsharp mask, difference of
Gaussians, Canny-style gradient NMS, motion masks, a mini ISP, stereo disparity (SAD + WTA),
dense Lucas-Kanade flow and HOG cell histograms (soft binning, no atomics)."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag, u8
from benchmark._lib.image import (GAUSS5, SAMPLE_ATOL, SOBEL_X, SOBEL_Y, bilinear_np, bilinear_te, clamp_te,
                                  half_pixel_np, half_pixel_te, reflect101_te, stencil_np, stencil_te, window_reduce_np)
from benchmark.image_l1_color import IMAGENET_MEAN, IMAGENET_STD, K_G, K_RB, _bayer_masks, nv12_rgb_ref
from benchmark._lib.image import const_te as _c, placeholder_te as _ph, prim_func_te as _pf
from leka.tasks.task import Task


def _sel3(k, a, b, c):
    from tvm import te

    return te.if_then_else(k == 0, a, te.if_then_else(k == 1, b, c))


def _prod(a, b):
    return lambda y, x: a[y, x] * b[y, x]


def _boxsum(t, k, h, w):
    return lambda y, x: stencil_te(lambda a, b: t[a, b], np.ones((k, k)), y, x, h, w)


def _grid(h, w, oh, ow):
    return np.meshgrid(half_pixel_np(oh, h / oh), half_pixel_np(ow, w / ow), indexing="ij")


# --- preprocessing --------------------------------------------------------------------------------
def resize_norm_def(h, w, o):
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    R = te.compute((o, o, 3), lambda y, x, k: bilinear_te(lambda a, b: X[a, b, k].astype("float32"),
                                                          half_pixel_te(y, h / o), half_pixel_te(x, w / o), h, w), name="rs")
    return _pf(X, te.compute((3, o, o), lambda k, y, x: (R[y, x, k] * _c(1 / 255.0) - _sel3(k, *map(_c, IMAGENET_MEAN)))
                             / _sel3(k, *map(_c, IMAGENET_STD)), name="Y"))


def resize_norm_ref(x, o):
    r = bilinear_np(x, *_grid(x.shape[0], x.shape[1], o, o))
    return ((r / 255.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)).transpose(2, 0, 1)


def resize_q_def(h, w, o):
    """u8 camera -> bilinear resize -> int8 model input (scale 1, zp -128), rounded half away."""
    from benchmark._lib.quant import round_half_away_te
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    R = te.compute((o, o, 3), lambda y, x, k: bilinear_te(lambda a, b: X[a, b, k].astype("float32"),
                                                          half_pixel_te(y, h / o), half_pixel_te(x, w / o), h, w), name="rs")
    return _pf(X, te.compute((o, o, 3), lambda *i: te.min(te.max(round_half_away_te(R(*i)) - _c(128.0), _c(-128.0)),
                                                          _c(127.0)).astype("int8"), name="Y"))


def resize_q_pre(x, o):
    """The exact resized value that resize_q_ref rounds (where it is k + 0.5, float32 may round either way)."""
    return bilinear_np(x, *_grid(x.shape[0], x.shape[1], o, o))


def resize_q_ref(x, o):
    return np.clip(np.floor(resize_q_pre(x, o) + 0.5) - 128, -128, 127)


def nv12_resize_def(h, w, o):
    from tvm import te

    Yp, UV = _ph((h, w), "uint8", "Yp"), _ph((h // 2, w), "uint8", "UV")

    def rgb(y, x, k):
        c = Yp[y, x].astype("int32") - 16
        d = UV[y // 2, (x // 2) * 2].astype("int32") - 128
        e = UV[y // 2, (x // 2) * 2 + 1].astype("int32") - 128
        v = _sel3(k, 298 * c + 409 * e, 298 * c - 100 * d - 208 * e, 298 * c + 516 * d) + 128
        return te.min(te.max(v >> 8, 0), 255).astype("float32")
    C = te.compute((h, w, 3), rgb, name="rgb")
    return _pf(Yp, UV, te.compute((o, o, 3), lambda y, x, k: bilinear_te(lambda a, b: C[a, b, k], half_pixel_te(y, h / o),
                                                                          half_pixel_te(x, w / o), h, w)
                                  * _c(1 / 127.5) - _c(1.0), name="Y"))


def nv12_resize_ref(yp, uv, o):
    rgb = nv12_rgb_ref(yp, uv).astype(np.float64)
    return bilinear_np(rgb, *_grid(yp.shape[0], yp.shape[1], o, o)) / 127.5 - 1.0


def _letterbox_geom(h, w, o):
    s = min(o / h, o / w)
    nh, nw = round(h * s), round(w * s)
    return nh, nw, (o - nh) // 2, (o - nw) // 2


def letterbox_def(h, w, o):
    """YOLO letterbox: aspect-preserving bilinear resize into an o x o canvas padded with 114, /255, CHW."""
    from tvm import te

    nh, nw, top, left = _letterbox_geom(h, w, o)
    X = _ph((h, w, 3), "uint8")

    def f(k, y, x):
        yy, xx = y - top, x - left
        inside = te.all(yy >= 0, yy < nh, xx >= 0, xx < nw)
        v = bilinear_te(lambda a, b: X[a, b, k].astype("float32"), half_pixel_te(yy, h / nh), half_pixel_te(xx, w / nw),
                        h, w)
        return te.if_then_else(inside, v, _c(114.0)) * _c(1 / 255.0)
    return _pf(X, te.compute((3, o, o), f, name="Y"))


def letterbox_ref(x, o):
    h, w = x.shape[:2]
    nh, nw, top, left = _letterbox_geom(h, w, o)
    canvas = np.full((o, o, 3), 114.0)
    canvas[top:top + nh, left:left + nw] = bilinear_np(x, *_grid(h, w, nh, nw))
    return (canvas / 255.0).transpose(2, 0, 1)


# --- geometry / features -------------------------------------------------------------------------------
def _camera(h, w):
    f = 0.9 * w
    return dict(fx=f, fy=f, cx=(w - 1) / 2 + 3.5, cy=(h - 1) / 2 - 2.5, k1=-0.28, k2=0.07, p1=0.0008, p2=-0.0005)


def undistort_def(h, w):
    """cv2.initUndistortRectifyMap (plumb-bob) evaluated inline, then bilinear sampling."""
    from tvm import te

    cam = _camera(h, w)
    X = _ph((h, w))

    def f(y, x):
        xn = (x.astype("float32") - _c(cam["cx"])) * _c(1 / cam["fx"])
        yn = (y.astype("float32") - _c(cam["cy"])) * _c(1 / cam["fy"])
        r2 = xn * xn + yn * yn
        radial = _c(1.0) + _c(cam["k1"]) * r2 + _c(cam["k2"]) * r2 * r2
        xd = xn * radial + _c(2 * cam["p1"]) * xn * yn + _c(cam["p2"]) * (r2 + _c(2.0) * xn * xn)
        yd = yn * radial + _c(cam["p1"]) * (r2 + _c(2.0) * yn * yn) + _c(2 * cam["p2"]) * xn * yn
        return bilinear_te(lambda a, b: X[a, b], yd * _c(cam["fy"]) + _c(cam["cy"]), xd * _c(cam["fx"]) + _c(cam["cx"]), h, w)
    return _pf(X, te.compute((h, w), f, name="Y"))


def undistort_ref(x):
    h, w = x.shape
    cam = _camera(h, w)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    xn, yn = (xx - cam["cx"]) / cam["fx"], (yy - cam["cy"]) / cam["fy"]
    r2 = xn * xn + yn * yn
    radial = 1 + cam["k1"] * r2 + cam["k2"] * r2 * r2
    xd = xn * radial + 2 * cam["p1"] * xn * yn + cam["p2"] * (r2 + 2 * xn * xn)
    yd = yn * radial + cam["p1"] * (r2 + 2 * yn * yn) + 2 * cam["p2"] * xn * yn
    return bilinear_np(x, yd * cam["fy"] + cam["cy"], xd * cam["fx"] + cam["cx"])


HARRIS_K = 0.04


def harris_def(h, w):
    from tvm import te

    X = _ph((h, w))
    g = lambda a, b: X[a, b]  # noqa: E731
    GX = te.compute((h, w), lambda y, x: stencil_te(g, SOBEL_X, y, x, h, w), name="gx")
    GY = te.compute((h, w), lambda y, x: stencil_te(g, SOBEL_Y, y, x, h, w), name="gy")
    prods = {n: te.compute((h, w), _prod(a, b), name=n) for n, a, b in (("ixx", GX, GX), ("iyy", GY, GY), ("ixy", GX, GY))}
    S = {n: te.compute((h, w), _boxsum(t, 5, h, w), name=f"s{n}") for n, t in prods.items()}

    def resp(y, x):
        a, b, c = S["ixx"][y, x], S["iyy"][y, x], S["ixy"][y, x]
        return a * b - c * c - _c(HARRIS_K) * (a + b) * (a + b)
    return _pf(X, te.compute((h, w), resp, name="R"))


def harris_ref(x):
    gx, gy = stencil_np(x, SOBEL_X), stencil_np(x, SOBEL_Y)
    box = np.ones((5, 5))
    a, b, c = stencil_np(gx * gx, box), stencil_np(gy * gy, box), stencil_np(gx * gy, box)
    return a * b - c * c - HARRIS_K * (a + b) ** 2


UNSHARP_AMOUNT = 1.5


def unsharp_def(shape):
    from tvm import te

    h, w = shape[:2]
    X = _ph(shape)
    if len(shape) == 2:
        B = te.compute(shape, lambda y, x: stencil_te(lambda a, b: X[a, b], GAUSS5, y, x, h, w), name="blur")
    else:
        B = te.compute(shape, lambda y, x, k: stencil_te(lambda a, b: X[a, b, k], GAUSS5, y, x, h, w), name="blur")
    return _pf(X, te.compute(shape, lambda *i: te.min(te.max(X(*i) + _c(UNSHARP_AMOUNT) * (X(*i) - B(*i)), _c(0.0)),
                                                      _c(1.0)), name="Y"))


def unsharp_ref(x):
    return np.clip(x + UNSHARP_AMOUNT * (x - stencil_np(x, GAUSS5)), 0, 1)


def _gauss(k, sigma):
    g = np.exp(-(np.arange(k) - k // 2) ** 2 / (2 * sigma ** 2))
    g /= g.sum()
    return np.outer(g, g)


DOG_A, DOG_B = _gauss(5, 1.0), _gauss(7, 1.6)


def dog_def(h, w):
    from tvm import te

    X = _ph((h, w))
    g = lambda a, b: X[a, b]  # noqa: E731
    A = te.compute((h, w), lambda y, x: stencil_te(g, DOG_A, y, x, h, w), name="g1")
    B = te.compute((h, w), lambda y, x: stencil_te(g, DOG_B, y, x, h, w), name="g2")
    return _pf(X, te.compute((h, w), lambda y, x: A[y, x] - B[y, x], name="Y"))


def canny_nms_def(h, w):
    """Integer Sobel on u8, squared magnitude, keep local maxima along the gradient direction (4 sectors,
    tan 22.5 ~ 41421/100000 and tan 67.5 ~ 241421/100000 in int64): all decisions are exact."""
    from tvm import te, tirx

    X = _ph((h, w), "uint8")

    def grad(kern):
        return lambda y, x: sum(X[reflect101_te(y + i - 1, h), reflect101_te(x + j - 1, w)].astype("int32") * int(kern[i, j])
                                for i in range(3) for j in range(3) if kern[i, j] != 0)
    GX = te.compute((h, w), grad(SOBEL_X), name="gx")
    GY = te.compute((h, w), grad(SOBEL_Y), name="gy")
    M = te.compute((h, w), lambda y, x: GX[y, x] * GX[y, x] + GY[y, x] * GY[y, x], name="mag2")
    i64 = lambda v: v.astype("int64")  # noqa: E731

    def f(y, x):
        ax, ay = i64(te.abs(GX[y, x])), i64(te.abs(GY[y, x]))
        same_sign = GX[y, x] * GY[y, x] > 0
        horiz = ay * 100000 <= ax * 41421
        vert = ay * 100000 >= ax * 241421
        m = lambda dy, dx: M[clamp_te(y + dy, h), clamp_te(x + dx, w)]  # noqa: E731
        n1 = te.if_then_else(horiz, m(0, -1), te.if_then_else(vert, m(-1, 0),
                                                               te.if_then_else(same_sign, m(-1, -1), m(-1, 1))))
        n2 = te.if_then_else(horiz, m(0, 1), te.if_then_else(vert, m(1, 0), te.if_then_else(same_sign, m(1, 1), m(1, -1))))
        return te.if_then_else(te.all(M[y, x] >= n1, M[y, x] >= n2), M[y, x], tirx.const(0, "int32"))
    return _pf(X, te.compute((h, w), f, name="Y"))


def canny_nms_ref(x):
    h, w = x.shape
    gx = np.rint(stencil_np(x, SOBEL_X)).astype(np.int64)
    gy = np.rint(stencil_np(x, SOBEL_Y)).astype(np.int64)
    m = gx * gx + gy * gy
    p = np.pad(m, 1, mode="edge")
    sh = lambda dy, dx: p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]  # noqa: E731
    ax, ay = np.abs(gx), np.abs(gy)
    horiz, vert, same = ay * 100000 <= ax * 41421, ay * 100000 >= ax * 241421, gx * gy > 0
    n1 = np.where(horiz, sh(0, -1), np.where(vert, sh(-1, 0), np.where(same, sh(-1, -1), sh(-1, 1))))
    n2 = np.where(horiz, sh(0, 1), np.where(vert, sh(1, 0), np.where(same, sh(1, 1), sh(1, -1))))
    return np.where((m >= n1) & (m >= n2), m, 0)


MOTION_T = 25


def motion_def(h, w):
    """|frame - bg| -> 3x3 integer box sum -> threshold (mask), and bg' = (7 bg + frame + 4) >> 3."""
    from tvm import te

    F, B = _ph((h, w), "uint8", "frame"), _ph((h, w), "uint8", "bg")
    D = te.compute((h, w), lambda y, x: te.abs(F[y, x].astype("int32") - B[y, x].astype("int32")), name="diff")
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    S = te.compute((h, w), lambda y, x: te.sum(D[clamp_te(y + ry - 1, h), clamp_te(x + rx - 1, w)], axis=[ry, rx]),
                   name="box")
    mask = te.compute((h, w), lambda y, x: te.if_then_else(S[y, x] > 9 * MOTION_T, 255, 0).astype("uint8"), name="mask")
    nbg = te.compute((h, w), lambda y, x: ((B[y, x].astype("int32") * 7 + F[y, x].astype("int32") + 4) >> 3)
                     .astype("uint8"), name="new_bg")
    return _pf(F, B, mask, nbg)


def motion_ref(f, b):
    d = np.abs(f.astype(np.int64) - b.astype(np.int64))
    s = window_reduce_np(d, 3, "sum", border="edge")
    return np.where(s > 9 * MOTION_T, 255, 0), (b.astype(np.int64) * 7 + f + 4) >> 3


def _motion_inputs(h, w, rng, dist):
    bg = rng.integers(0, 256, (h, w))
    frame = bg + rng.integers(-10, 11, (h, w))
    y0, x0 = rng.integers(0, h // 2), rng.integers(0, w // 2)
    frame[y0:y0 + h // 3, x0:x0 + w // 3] = rng.integers(0, 256, (h // 3, w // 3))  # a moving object
    return [np.clip(frame, 0, 255).astype("uint8"), bg.astype("uint8")]


WB = (1.9, 1.0, 1.6)
CCM = np.array([[1.6, -0.4, -0.2], [-0.3, 1.5, -0.2], [0.0, -0.6, 1.6]])


def isp_def(h, w):
    """RGGB 10-bit -> bilinear demosaic -> white balance -> colour matrix -> clip -> sRGB gamma."""
    from tvm import te

    R = _ph((h, w), "uint16", "raw")

    def chan(k):
        def get(y, x):
            keep = {0: te.all(y % 2 == 0, x % 2 == 0), 1: (y + x) % 2 == 1, 2: te.all(y % 2 == 1, x % 2 == 1)}[k]
            return te.if_then_else(keep, R[y, x].astype("float32") * _c(WB[k] / 1023.0), _c(0.0))
        return get
    D = te.compute((h, w, 3), lambda y, x, k: _sel3(k, stencil_te(chan(0), K_RB, y, x, h, w),
                                                    stencil_te(chan(1), K_G, y, x, h, w),
                                                    stencil_te(chan(2), K_RB, y, x, h, w)), name="demosaic")

    def f(y, x, k):
        v = sum(D[y, x, j] * _sel3(k, _c(CCM[0, j]), _c(CCM[1, j]), _c(CCM[2, j])) for j in range(3))
        v = te.min(te.max(v, _c(0.0)), _c(1.0))
        # sRGB transfer curve: its linear toe keeps the slope bounded near black (a pure power law would
        # amplify the CCM's cancellation error without bound there)
        return te.if_then_else(v <= _c(0.0031308), v * _c(12.92),
                               _c(1.055) * te.exp(te.log(te.max(v, _c(0.0031308))) * _c(1 / 2.4)) - _c(0.055))
    return _pf(R, te.compute((h, w, 3), f, name="RGB"))


def isp_ref(raw):
    h, w = raw.shape
    v = raw.astype(np.float64) / 1023.0
    d = np.stack([stencil_np(v * m * g, k) for m, k, g in zip(_bayer_masks(h, w), (K_RB, K_G, K_RB), WB)], -1)
    v = np.clip(d @ CCM.T, 0.0, 1.0)
    return np.where(v <= 0.0031308, 12.92 * v, 1.055 * np.maximum(v, 0.0031308) ** (1 / 2.4) - 0.055)


def stereo_wta_def(h, w, d, k):
    from tvm import te, tirx

    L, R = _ph((h, w), "uint8", "L"), _ph((h, w), "uint8", "R")
    ry, rx = te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")

    def cost(dd, y, x):
        yy, xx = clamp_te(y + ry - k // 2, h), clamp_te(x + rx - k // 2, w)
        return te.sum(te.abs(L[yy, xx].astype("int32") - R[yy, clamp_te(xx - dd, w)].astype("int32")), axis=[ry, rx])
    C = te.compute((d, h, w), cost, name="cost")
    k1, k2 = te.reduce_axis((0, d), "k1"), te.reduce_axis((0, d), "k2")
    Mn = te.compute((h, w), lambda y, x: te.min(C[k1, y, x], axis=k1), name="cmin")
    return _pf(L, R, te.compute((h, w), lambda y, x: te.min(te.if_then_else(C[k2, y, x] == Mn[y, x], k2,
                                                                             tirx.const(d, "int32")), axis=k2), name="disp"))


def stereo_wta_ref(left, right, d, k):
    from benchmark.image_l1_filter import sad_ref

    return np.argmin(sad_ref(left, right, d, k), axis=0)  # first minimum, like the kernel


LK_LAMBDA = 1e-2  # Tikhonov term: keeps the 2x2 solve well conditioned in flat windows


def lk_def(h, w, win):
    from tvm import te

    I1, I2 = _ph((h, w), name="I1"), _ph((h, w), name="I2")
    IX = te.compute((h, w), lambda y, x: (I1[y, reflect101_te(x + 1, w)] - I1[y, reflect101_te(x - 1, w)]) * _c(0.5),
                    name="ix")
    IY = te.compute((h, w), lambda y, x: (I1[reflect101_te(y + 1, h), x] - I1[reflect101_te(y - 1, h), x]) * _c(0.5),
                    name="iy")
    IT = te.compute((h, w), lambda y, x: I2[y, x] - I1[y, x], name="it")
    terms = {"xx": (IX, IX), "yy": (IY, IY), "xy": (IX, IY), "xt": (IX, IT), "yt": (IY, IT)}
    P = {n: te.compute((h, w), _prod(a, b), name=f"p{n}") for n, (a, b) in terms.items()}
    S = {n: te.compute((h, w), _boxsum(t, win, h, w), name=f"s{n}") for n, t in P.items()}

    def solve(comp):
        def f(y, x):
            a, b, dd = S["xx"][y, x] + _c(LK_LAMBDA), S["xy"][y, x], S["yy"][y, x] + _c(LK_LAMBDA)
            det = a * dd - b * b
            if comp == 0:
                return -(dd * S["xt"][y, x] - b * S["yt"][y, x]) / det
            return -(a * S["yt"][y, x] - b * S["xt"][y, x]) / det
        return f
    return _pf(I1, I2, te.compute((h, w), solve(0), name="u"), te.compute((h, w), solve(1), name="v"))


def lk_ref(i1, i2, win):
    p = np.pad(i1.astype(np.float64), 1, mode="reflect")
    ix = (p[1:-1, 2:] - p[1:-1, :-2]) * 0.5
    iy = (p[2:, 1:-1] - p[:-2, 1:-1]) * 0.5
    it = i2.astype(np.float64) - i1
    box = np.ones((win, win))
    s = {n: stencil_np(a * b, box) for n, (a, b) in
         {"xx": (ix, ix), "yy": (iy, iy), "xy": (ix, iy), "xt": (ix, it), "yt": (iy, it)}.items()}
    a, b, d = s["xx"] + LK_LAMBDA, s["xy"], s["yy"] + LK_LAMBDA
    det = a * d - b * b
    return -(d * s["xt"] - b * s["yt"]) / det, -(a * s["yt"] - b * s["xt"]) / det


def _lk_inputs(h, w, rng, dist):
    """Smooth random texture and a sub-pixel shifted copy (true flow ~ (0.3, -0.2) px)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    freqs = rng.uniform(0.05, 0.4, (6, 2))
    phase = rng.uniform(0, 2 * np.pi, 6)
    tex = lambda dy, dx: sum(np.sin(f[0] * (yy + dy) + f[1] * (xx + dx) + p) for f, p in zip(freqs, phase)) / 6  # noqa
    noise = rng.normal(0, 0.01, (2, h, w))
    return [(tex(0, 0) + noise[0]).astype("float32"), (tex(0.2, -0.3) + noise[1]).astype("float32")]


HOG_CELL, HOG_BINS = 8, 9


def hog_def(h, w):
    """Per-cell 9-bin orientation histograms weighted by gradient magnitude, linear (soft) binning."""
    from tvm import te, tirx

    X = _ph((h, w))
    gx = lambda y, x: X[y, reflect101_te(x + 1, w)] - X[y, reflect101_te(x - 1, w)]  # noqa: E731
    gy = lambda y, x: X[reflect101_te(y + 1, h), x] - X[reflect101_te(y - 1, h), x]  # noqa: E731
    M = te.compute((h, w), lambda y, x: te.sqrt(gx(y, x) * gx(y, x) + gy(y, x) * gy(y, x)), name="mag")
    A = te.compute((h, w), lambda y, x: tirx.atan2(gy(y, x), gx(y, x)) * _c(180.0 / np.pi), name="ang")
    POS = te.compute((h, w), lambda y, x: te.if_then_else(A[y, x] < _c(0.0), A[y, x] + _c(180.0), A[y, x])
                     * _c(1 / 20.0) - _c(0.5), name="binpos")
    ry, rx = te.reduce_axis((0, HOG_CELL), "ry"), te.reduce_axis((0, HOG_CELL), "rx")

    def f(cy, cx, b):
        y, x = cy * HOG_CELL + ry, cx * HOG_CELL + rx
        d = POS[y, x] - b.astype("float32")
        d = d - _c(9.0) * te.floor(d * _c(1 / 9.0) + _c(0.5))
        return te.sum(M[y, x] * te.max(_c(1.0) - te.abs(d), _c(0.0)), axis=[ry, rx])
    return _pf(X, te.compute((h // HOG_CELL, w // HOG_CELL, HOG_BINS), f, name="hist"))


def hog_ref(x):
    h, w = x.shape
    p = np.pad(x.astype(np.float64), 1, mode="reflect")
    gx, gy = p[1:-1, 2:] - p[1:-1, :-2], p[2:, 1:-1] - p[:-2, 1:-1]
    ang = np.degrees(np.arctan2(gy, gx))
    pos = np.where(ang < 0, ang + 180, ang) / 20 - 0.5
    d = pos[..., None] - np.arange(HOG_BINS)
    d = d - 9 * np.floor(d / 9 + 0.5)
    contrib = np.hypot(gx, gy)[..., None] * np.maximum(1 - np.abs(d), 0)
    return contrib.reshape(h // HOG_CELL, HOG_CELL, w // HOG_CELL, HOG_CELL, HOG_BINS).sum(axis=(1, 3))


def _unit(shape, rng, dist):
    return [rng.uniform(0.0, 1.0, shape).astype("float32")]


def _i(pattern, tag, args, build, ref, flops, desc, dtype="float32", **kw) -> Task:
    return make_task(level=2, pattern=pattern, tag=shape_tag(tag), domain="image-processing", args=args, build=build,
                     reference=ref, flops=flops, description=desc, dtype=dtype, layout="HWC", **kw)


def tasks() -> list[Task]:
    from benchmark.image_l1_filter import _stereo_inputs

    ts: list[Task] = []
    for h, w, o, src in ((480, 640, 224, "VGA camera -> MobileNet 224 input"), (240, 320, 128, "QVGA -> 128 input")):
        ts.append(_i("preprocess_resize_normalize_chw", (h, w, o), (u8("X", (h, w, 3)), out("Y", (3, o, o))),
                     partial(resize_norm_def, h, w, o), partial(resize_norm_ref, o=o), 14 * o * o * 3,
                     f"{src}: bilinear resize, /255, ImageNet mean/std, HWC->CHW", "uint8", atol=SAMPLE_ATOL))
    for h, w, o, src in ((240, 320, 96, "QVGA -> VWW int8 96x96 input"), (480, 640, 160, "VGA -> int8 160x160 input")):
        # the resize lands on exact .5 ties (fractional weights 1/4, 3/4), so float rounding may go either way:
        # +-1 LSB is allowed on those ties only, located from the exact pre-rounding value
        ts.append(_i("preprocess_resize_quantize_i8", (h, w, o), (u8("X", (h, w, 3)), out("Y", (o, o, 3), "int8")),
                     partial(resize_q_def, h, w, o), partial(resize_q_ref, o=o), 12 * o * o * 3,
                     f"{src}: bilinear resize, round, zp -128 (scale 1)", "uint8", int_tolerance="ties",
                     pre_rounding=partial(resize_q_pre, o=o)))
    for h, w, o, src in ((720, 1280, 300, "720p NV12 camera -> SSD-MobileNetV2 300 input"),
                         (480, 640, 320, "VGA NV12 camera -> SSD-MobileDet 320 input")):
        ts.append(_i("nv12_to_rgb_resize_pm1", (h, w, o), (u8("Yp", (h, w)), u8("UV", (h // 2, w)), out("Y", (o, o, 3))),
                     partial(nv12_resize_def, h, w, o), partial(nv12_resize_ref, o=o), 12 * h * w + 10 * o * o * 3,
                     f"{src}: BT.601 integer conversion, bilinear resize, [-1, 1]", "uint8", atol=SAMPLE_ATOL))
    for h, w, o, src in ((480, 640, 320, "YOLOv5 letterbox VGA -> 320"), (720, 1280, 320, "YOLOv5 letterbox 720p -> 320")):
        ts.append(_i("letterbox_resize_pad_chw", (h, w, o), (u8("X", (h, w, 3)), out("Y", (3, o, o))),
                     partial(letterbox_def, h, w, o), partial(letterbox_ref, o=o), 10 * o * o * 3,
                     f"{src}: aspect-preserving bilinear resize, pad 114, /255, CHW", "uint8", atol=SAMPLE_ATOL))
    for h, w, src in ((480, 640, "VGA wide-angle lens undistortion"), (376, 620, "KITTI-size undistortion")):
        ts.append(_i("undistort_bilinear_f32", (h, w), (inp("X", (h, w)), out("Y", (h, w))), partial(undistort_def, h, w),
                     undistort_ref, 40 * h * w, f"{src}: plumb-bob map (k1,k2,p1,p2) computed inline + bilinear",
                     make_inputs=partial(_unit, (h, w)), atol=SAMPLE_ATOL))
    for h, w, src in ((240, 320, "QVGA Harris corners (ORB keypoint score)"), (480, 640, "VGA Harris corners")):
        ts.append(_i("harris_response_f32", (h, w), (inp("X", (h, w)), out("R", (h, w))), partial(harris_def, h, w),
                     harris_ref, 100 * h * w, f"{src}: Sobel, products, 5x5 box sums, det - {HARRIS_K} tr^2",
                     make_inputs=partial(_unit, (h, w))))
    for shape, src in (((480, 640), "VGA gray sharpening"), ((240, 320, 3), "QVGA RGB sharpening")):
        ts.append(_i("unsharp_mask_f32", shape, (inp("X", shape), out("Y", shape)), partial(unsharp_def, shape), unsharp_ref,
                     54 * numel(shape), f"{src}: x + {UNSHARP_AMOUNT}(x - gauss5(x)), clamp [0,1]",
                     make_inputs=partial(_unit, shape)))
    for h, w, src in ((240, 320, "QVGA SIFT-style DoG level"), (480, 640, "VGA DoG level")):
        ts.append(_i("difference_of_gaussians_f32", (h, w), (inp("X", (h, w)), out("Y", (h, w))), partial(dog_def, h, w),
                     lambda x: stencil_np(x, DOG_A) - stencil_np(x, DOG_B), 150 * h * w,
                     f"{src}: gauss 5x5 s1.0 - gauss 7x7 s1.6", make_inputs=partial(_unit, (h, w))))
    for h, w, src in ((240, 320, "QVGA Canny stage 1-2"), (480, 640, "VGA Canny stage 1-2")):
        ts.append(_i("sobel_nms_u8", (h, w), (u8("X", (h, w)), out("Y", (h, w), "int32")), partial(canny_nms_def, h, w),
                     canny_nms_ref, 40 * h * w, f"{src}: integer Sobel, squared magnitude, 4-direction NMS", "uint8"))
    for h, w, src in ((240, 320, "QVGA surveillance motion mask"), (480, 640, "VGA motion mask")):
        ts.append(_i("motion_mask_bg_update_u8", (h, w), (u8("frame", (h, w)), u8("bg", (h, w)),
                                                          out("mask", (h, w), "uint8"), out("new_bg", (h, w), "uint8")),
                     partial(motion_def, h, w), motion_ref, 16 * h * w,
                     f"{src}: |frame-bg|, 3x3 sum > 9*{MOTION_T}, running-average background", "uint8",
                     make_inputs=partial(_motion_inputs, h, w)))
    for h, w, src in ((240, 320, "QVGA mini ISP"), (480, 640, "VGA mini ISP")):
        ts.append(_i("isp_demosaic_wb_ccm_gamma", (h, w), (inp("raw", (h, w), "uint16", low=0, high=1024),
                                                           out("RGB", (h, w, 3))),
                     partial(isp_def, h, w), isp_ref, 80 * h * w,
                     f"{src}: RGGB bilinear demosaic, WB {WB}, 3x3 CCM, sRGB gamma", "uint16"))
    for h, w, d, k, src in ((120, 160, 16, 5, "QQVGA stereo, 16 disparities, 5x5 SAD"),
                            (96, 128, 32, 3, "96x128 stereo, 32 disparities, 3x3 SAD")):
        ts.append(_i("stereo_sad_wta_disparity_u8", (h, w, d, k), (u8("L", (h, w)), u8("R", (h, w)),
                                                                   out("disp", (h, w), "int32")),
                     partial(stereo_wta_def, h, w, d, k), partial(stereo_wta_ref, d=d, k=k), (3 * k * k + 2) * d * h * w,
                     f"{src}: SAD cost volume + winner-takes-all (first minimum)", "uint8",
                     make_inputs=partial(_stereo_inputs, h, w, d)))
    for h, w, win, src in ((120, 160, 5, "QQVGA dense Lucas-Kanade, 5x5 window"),
                           (240, 320, 7, "QVGA dense Lucas-Kanade, 7x7 window")):
        ts.append(_i("lucas_kanade_dense_flow_f32", (h, w, win), (inp("I1", (h, w)), inp("I2", (h, w)), out("u", (h, w)),
                                                                  out("v", (h, w))),
                     partial(lk_def, h, w, win), partial(lk_ref, win=win), (10 * win * win + 30) * h * w,
                     f"{src}: gradients, windowed structure tensor, regularised 2x2 solve (lambda {LK_LAMBDA})",
                     # the solve's numerator cancels where the flow is ~0: fp32 window sums (~1e-6 relative
                     # error) times the structure tensor's condition number give ~2e-5 of max|flow|
                     make_inputs=partial(_lk_inputs, h, w), atol=1e-4))
    for h, w, src in ((128, 64, "HOG pedestrian window 64x128 -> 16x8 cells"), (240, 320, "QVGA HOG -> 30x40 cells")):
        ts.append(_i("hog_cell_histogram_f32", (h, w), (inp("X", (h, w)), out("hist", (h // 8, w // 8, 9))),
                     partial(hog_def, h, w), hog_ref, 40 * h * w,
                     "{}: 9 unsigned bins, 8x8 cells, magnitude-weighted linear binning".format(src),
                     make_inputs=partial(_unit, (h, w))))
    return ts
