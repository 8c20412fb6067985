"""L1 image-processing filters and stencils: Gaussian / box / Laplacian / Sobel, bilateral,
morphology, median, adaptive threshold, census transform, integral image, stereo SAD cost volume and
gradient orientation. Float filters use reflect-101 borders; u8 filters are exact integer maths."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, out, shape_tag, u8
from benchmark._lib.image import (GAUSS3, GAUSS5, LAPLACE, SOBEL_X, SOBEL_Y, clamp_te, reflect101_te, stencil_np,
                                  stencil_te, window_reduce_np)
from benchmark._lib.image import const_te as _c, placeholder_te as _ph, prim_func_te as _pf
from leka.tasks.task import Task


def stencil_def(shape, weights):
    """Float stencil on gray (H,W) or channels-last (H,W,C) images."""
    from tvm import te

    X = _ph(shape)
    h, w = shape[:2]
    if len(shape) == 2:
        f = lambda y, x: stencil_te(lambda a, b: X[a, b], weights, y, x, h, w)  # noqa: E731
    else:
        f = lambda y, x, k: stencil_te(lambda a, b: X[a, b, k], weights, y, x, h, w)  # noqa: E731
    return _pf(X, te.compute(shape, f, name="Y"))


def gauss3_u8_def(h, w):
    from tvm import te

    X = _ph((h, w), "uint8")
    k = (GAUSS3 * 16).astype(int)

    def f(y, x):
        acc = sum(X[reflect101_te(y + i - 1, h), reflect101_te(x + j - 1, w)].astype("int32") * int(k[i, j])
                  for i in range(3) for j in range(3))
        return ((acc + 8) >> 4).astype("uint8")
    return _pf(X, te.compute((h, w), f, name="Y"))


def sobel_xy_def(h, w):
    from tvm import te

    X = _ph((h, w), "uint8")

    def grad(kern):
        def f(y, x):
            return sum(X[reflect101_te(y + i - 1, h), reflect101_te(x + j - 1, w)].astype("int32") * int(kern[i, j])
                       for i in range(3) for j in range(3) if kern[i, j] != 0).astype("int16")
        return f
    return _pf(X, te.compute((h, w), grad(SOBEL_X), name="GX"), te.compute((h, w), grad(SOBEL_Y), name="GY"))


def sobel_mag_def(h, w):
    from tvm import te

    X = _ph((h, w))
    g = lambda a, b: X[a, b]  # noqa: E731
    GX = te.compute((h, w), lambda y, x: stencil_te(g, SOBEL_X, y, x, h, w), name="gx")
    GY = te.compute((h, w), lambda y, x: stencil_te(g, SOBEL_Y, y, x, h, w), name="gy")
    return _pf(X, te.compute((h, w), lambda y, x: te.sqrt(GX[y, x] * GX[y, x] + GY[y, x] * GY[y, x]), name="Y"))


def sobel_mag_ref(x):
    return np.hypot(stencil_np(x, SOBEL_X), stencil_np(x, SOBEL_Y))


def morph_def(h, w, op):
    from tvm import te

    X = _ph((h, w), "uint8")
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    red = te.min if op == "min" else te.max
    return _pf(X, te.compute((h, w), lambda y, x: red(X[clamp_te(y + ry - 1, h), clamp_te(x + rx - 1, w)], axis=[ry, rx]),
                             name="Y"))


def median3_def(h, w):
    """Median of the 3x3 window by ranks (no sorting network): the value whose stable rank is 4."""
    from tvm import te

    X = _ph((h, w), "uint8")

    def tap(y, x, t):
        return X[clamp_te(y + t // 3 - 1, h), clamp_te(x + t % 3 - 1, w)].astype("int32")
    j = te.reduce_axis((0, 9), "j")
    R = te.compute((h, w, 9), lambda y, x, i: te.sum(te.if_then_else(
        te.any(tap(y, x, j) < tap(y, x, i), te.all(tap(y, x, j) == tap(y, x, i), j < i)), 1, 0), axis=j), name="rank")
    i2 = te.reduce_axis((0, 9), "i2")
    M = te.compute((h, w), lambda y, x: te.sum(te.if_then_else(R[y, x, i2] == 4, tap(y, x, i2), 0), axis=i2), name="med")
    return _pf(X, te.compute((h, w), lambda y, x: M[y, x].astype("uint8"), name="Y"))


def median3_ref(x):
    h, w = x.shape
    p = np.pad(x, 1, mode="edge")
    return np.median(np.stack([p[i:i + h, j:j + w] for i in range(3) for j in range(3)]), axis=0)


ADAPT_C = 5


def adapt_def(h, w, k):
    """255 where x*k*k > sum(k x k window, replicate border) - C*k*k (OpenCV ADAPTIVE_THRESH_MEAN_C in integers)."""
    from tvm import te

    X = _ph((h, w), "uint8")
    ry, rx = te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    S = te.compute((h, w), lambda y, x: te.sum(X[clamp_te(y + ry - k // 2, h), clamp_te(x + rx - k // 2, w)]
                                               .astype("int32"), axis=[ry, rx]), name="wsum")
    return _pf(X, te.compute((h, w), lambda y, x: te.if_then_else(X[y, x].astype("int32") * (k * k) > S[y, x]
                                                                  - ADAPT_C * k * k, 255, 0).astype("uint8"), name="Y"))


def adapt_ref(x, k):
    s = window_reduce_np(x.astype(np.int64), k, "sum", border="edge")
    return np.where(x.astype(np.int64) * k * k > s - ADAPT_C * k * k, 255, 0)


def census_def(h, w):
    from tvm import te

    X = _ph((h, w), "uint8")
    offs = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3) if (dy, dx) != (0, 0)]

    def f(y, x):
        c = X[y, x]
        return sum(te.if_then_else(X[reflect101_te(y + dy, h), reflect101_te(x + dx, w)] < c, _c(1 << b, "uint32"),
                                   _c(0, "uint32")) for b, (dy, dx) in enumerate(offs))
    return _pf(X, te.compute((h, w), f, name="Y"))


def census_ref(x):
    h, w = x.shape
    p = np.pad(x, 2, mode="reflect")
    offs = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3) if (dy, dx) != (0, 0)]
    out_ = np.zeros((h, w), np.uint64)
    for b, (dy, dx) in enumerate(offs):
        out_ |= (p[2 + dy:2 + dy + h, 2 + dx:2 + dx + w] < x).astype(np.uint64) << np.uint64(b)
    return out_.astype(np.uint32)


def integral_def(h, w):
    """Inclusive 2-D prefix sum in two passes (rows, then columns), int32."""
    from tvm import te

    X = _ph((h, w), "uint8")
    kx, ky = te.reduce_axis((0, w), "kx"), te.reduce_axis((0, h), "ky")
    Rw = te.compute((h, w), lambda y, x: te.sum(te.if_then_else(kx <= x, X[y, kx].astype("int32"), 0), axis=kx), name="rows")
    return _pf(X, te.compute((h, w), lambda y, x: te.sum(te.if_then_else(ky <= y, Rw[ky, x], 0), axis=ky), name="Y"))


def sad_def(h, w, d, k):
    """cost[d,y,x] = sum over k x k window of |L(y,x) - R(y,x-d)| (replicate border)."""
    from tvm import te

    L, R = _ph((h, w), "uint8", "L"), _ph((h, w), "uint8", "R")
    ry, rx = te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")

    def f(dd, y, x):
        yy, xx = clamp_te(y + ry - k // 2, h), clamp_te(x + rx - k // 2, w)
        diff = L[yy, xx].astype("int32") - R[yy, clamp_te(xx - dd, w)].astype("int32")
        return te.sum(te.abs(diff), axis=[ry, rx])
    return _pf(L, R, te.compute((d, h, w), f, name="cost"))


def sad_ref(left, right, d, k):
    w = left.shape[1]
    l64, r64 = left.astype(np.int64), right.astype(np.int64)
    # per-pixel |L - R shifted| first, then a replicate-border window sum (same as clamping window coords)
    return np.stack([window_reduce_np(np.abs(l64 - r64[:, np.clip(np.arange(w) - dd, 0, w - 1)]), k, "sum", "edge")
                     for dd in range(d)])


BIL_SIGMA_S, BIL_SIGMA_R = 1.5, 0.2


def bilateral_def(h, w):
    from tvm import te

    X = _ph((h, w))
    num = []
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            ws = float(np.exp(-(dy * dy + dx * dx) / (2 * BIL_SIGMA_S ** 2)))
            num.append((dy, dx, ws))

    def f(y, x):
        c = X[y, x]
        acc_n, acc_d = None, None
        for dy, dx, ws in num:
            v = X[reflect101_te(y + dy, h), reflect101_te(x + dx, w)]
            wt = _c(ws) * te.exp((v - c) * (v - c) * _c(-1.0 / (2 * BIL_SIGMA_R ** 2)))
            acc_n = wt * v if acc_n is None else acc_n + wt * v
            acc_d = wt if acc_d is None else acc_d + wt
        return acc_n / acc_d
    return _pf(X, te.compute((h, w), f, name="Y"))


def bilateral_ref(x):
    h, w = x.shape
    p = np.pad(x.astype(np.float64), 2, mode="reflect")
    n = np.zeros((h, w))
    d = np.zeros((h, w))
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            v = p[2 + dy:2 + dy + h, 2 + dx:2 + dx + w]
            wt = np.exp(-(dy * dy + dx * dx) / (2 * BIL_SIGMA_S ** 2)) * np.exp(-(v - x) ** 2 / (2 * BIL_SIGMA_R ** 2))
            n += wt * v
            d += wt
    return n / d


def grad_orient_def(h, w):
    """Central-difference gradient magnitude and unsigned orientation in degrees [0, 180) (HOG)."""
    from tvm import te, tirx

    X = _ph((h, w))
    gx = lambda y, x: X[y, reflect101_te(x + 1, w)] - X[y, reflect101_te(x - 1, w)]  # noqa: E731
    gy = lambda y, x: X[reflect101_te(y + 1, h), x] - X[reflect101_te(y - 1, h), x]  # noqa: E731
    M = te.compute((h, w), lambda y, x: te.sqrt(gx(y, x) * gx(y, x) + gy(y, x) * gy(y, x)), name="mag")

    def ang(y, x):
        a = tirx.atan2(gy(y, x), gx(y, x)) * _c(180.0 / np.pi)
        return te.if_then_else(a < _c(0.0), a + _c(180.0), a)
    return _pf(X, M, te.compute((h, w), ang, name="angle"))


def grad_orient_ref(x):
    p = np.pad(x.astype(np.float64), 1, mode="reflect")
    gx = p[1:-1, 2:] - p[1:-1, :-2]
    gy = p[2:, 1:-1] - p[:-2, 1:-1]
    a = np.degrees(np.arctan2(gy, gx))
    return np.hypot(gx, gy), np.where(a < 0, a + 180, a)


def _unit(shape, rng, dist):
    return [rng.uniform(0.0, 1.0, shape).astype("float32")]


def _i(pattern, tag, args, build, ref, flops, desc, dtype, **kw) -> Task:
    return make_task(level=1, pattern=pattern, tag=shape_tag(tag), domain="image-processing", args=args, build=build,
                     reference=ref, flops=flops, description=desc, dtype=dtype, layout="HW", **kw)


def _stereo_inputs(h, w, d, rng, dist):
    """Right image = left shifted by a random per-row disparity plus noise, so costs have real minima."""
    left = rng.integers(0, 256, (h, w))
    shift = rng.integers(0, d, (h, 1))
    cols = np.clip(np.arange(w)[None, :] + shift, 0, w - 1)
    right = np.take_along_axis(left, cols, 1) + rng.integers(-8, 9, (h, w))
    return [left.astype("uint8"), np.clip(right, 0, 255).astype("uint8")]


def tasks() -> list[Task]:
    ts: list[Task] = []
    for pattern, kern, entries in (
            ("gaussian_blur_5x5_f32", GAUSS5, [((480, 640), "VGA gray"), ((240, 320, 3), "QVGA RGB (HWC)")]),
            ("box_filter_5x5_f32", np.full((5, 5), 1 / 25), [((480, 640), "VGA gray"), ((120, 160, 3), "QQVGA RGB")]),
            ("laplacian_3x3_f32", LAPLACE, [((480, 640), "VGA gray focus/blur measure"), ((240, 320), "QVGA gray")])):
        for shape, src in entries:
            ts.append(_i(pattern, shape, (inp("X", shape), out("Y", shape)), partial(stencil_def, shape, kern),
                         partial(stencil_np, weights=kern), 2 * int(np.count_nonzero(kern)) * int(np.prod(shape)),
                         f"{src}: {kern.shape[0]}x{kern.shape[1]} stencil, reflect-101 border", "float32",
                         make_inputs=partial(_unit, shape)))
    for h, w, src in ((480, 640, "VGA gray"), (720, 1280, "720p luma")):
        ts.append(_i("gaussian_blur_3x3_u8", (h, w), (u8("X", (h, w)), out("Y", (h, w), "uint8")),
                     partial(gauss3_u8_def, h, w),
                     lambda x: (np.rint(stencil_np(x, GAUSS3) * 16).astype(np.int64) + 8) >> 4, 18 * h * w,
                     f"{src}: integer [1 2 1]^T[1 2 1] blur, (sum + 8) >> 4", "uint8"))
        ts.append(_i("sobel_3x3_u8_to_i16", (h, w), (u8("X", (h, w)), out("GX", (h, w), "int16"), out("GY", (h, w), "int16")),
                     partial(sobel_xy_def, h, w),
                     lambda x: (np.rint(stencil_np(x, SOBEL_X)), np.rint(stencil_np(x, SOBEL_Y))), 24 * h * w,
                     f"{src}: Sobel dx, dy (CV_16S), reflect-101", "uint8"))
    for h, w, src in ((480, 640, "VGA gray edge strength"), (360, 640, "360p gray edge strength")):
        ts.append(_i("sobel_magnitude_f32", (h, w), (inp("X", (h, w)), out("Y", (h, w))), partial(sobel_mag_def, h, w),
                     sobel_mag_ref, 27 * h * w, src, "float32", make_inputs=partial(_unit, (h, w))))
    for op, src in (("min", "erode"), ("max", "dilate")):
        for h, w, s2 in ((480, 640, "VGA binary/gray mask cleanup"), (240, 320, "QVGA mask cleanup")):
            ts.append(_i(f"{src}_3x3_u8", (h, w), (u8("X", (h, w)), out("Y", (h, w), "uint8")), partial(morph_def, h, w, op),
                         partial(window_reduce_np, k=3, op=op, border="edge"), 9 * h * w, f"{s2}: 3x3 {src}", "uint8"))
    for h, w, src in ((240, 320, "QVGA salt-and-pepper denoise"), (120, 160, "QQVGA denoise")):
        ts.append(_i("median_blur_3x3_u8", (h, w), (u8("X", (h, w)), out("Y", (h, w), "uint8")), partial(median3_def, h, w),
                     median3_ref, 90 * h * w, f"{src}: 3x3 median (rank selection), replicate border", "uint8"))
    for h, w, k, src in ((480, 640, 7, "VGA document binarisation, 7x7 window"),
                         (240, 320, 11, "QVGA marker detection binarisation, 11x11 window")):
        ts.append(_i("adaptive_threshold_mean_u8", (h, w, k), (u8("X", (h, w)), out("Y", (h, w), "uint8")),
                     partial(adapt_def, h, w, k), partial(adapt_ref, k=k), (k * k + 2) * h * w,
                     f"{src}: mean-C adaptive threshold, C={ADAPT_C}", "uint8"))
    for h, w, src in ((240, 320, "QVGA stereo census"), (376, 620, "KITTI half-width stereo census")):
        ts.append(_i("census_transform_5x5_u8", (h, w), (u8("X", (h, w)), out("Y", (h, w), "uint32")),
                     partial(census_def, h, w), census_ref, 48 * h * w, f"{src}: 24-bit census code", "uint8"))
    for h, w, src in ((120, 160, "QQVGA Viola-Jones integral image"), (144, 176, "QCIF integral image")):
        ts.append(_i("integral_image_u8_i32", (h, w), (u8("X", (h, w)), out("Y", (h, w), "int32")),
                     partial(integral_def, h, w), lambda x: x.astype(np.int64).cumsum(0).cumsum(1), 2 * h * w,
                     f"{src}: inclusive 2-D prefix sum", "uint8"))
    for h, w, d, k, src in ((120, 160, 16, 5, "QQVGA block-matching stereo, 16 disparities"),
                            (96, 128, 32, 3, "96x128 stereo, 32 disparities, 3x3 SAD")):
        ts.append(_i("stereo_sad_cost_volume_u8", (h, w, d, k), (u8("L", (h, w)), u8("R", (h, w)),
                                                                    out("cost", (d, h, w), "int32")),
                     partial(sad_def, h, w, d, k), partial(sad_ref, d=d, k=k), 3 * k * k * d * h * w,
                     f"{src}: SAD cost volume", "uint8", make_inputs=partial(_stereo_inputs, h, w, d)))
    for h, w, src in ((240, 320, "QVGA edge-preserving denoise"), (120, 160, "QQVGA edge-preserving denoise")):
        ts.append(_i("bilateral_filter_5x5_f32", (h, w), (inp("X", (h, w)), out("Y", (h, w))), partial(bilateral_def, h, w),
                     bilateral_ref, 25 * 8 * h * w, f"{src}: sigma_s {BIL_SIGMA_S}, sigma_r {BIL_SIGMA_R}", "float32",
                     make_inputs=partial(_unit, (h, w))))
    for h, w, src in ((128, 64, "HOG pedestrian detection window 64x128"), (240, 320, "QVGA HOG/edge orientation")):
        ts.append(_i("gradient_magnitude_orientation_f32", (h, w), (inp("X", (h, w)), out("mag", (h, w)),
                                                                    out("angle", (h, w))),
                     partial(grad_orient_def, h, w), grad_orient_ref, 12 * h * w,
                     f"{src}: central differences, unsigned angle [0,180)", "float32", make_inputs=partial(_unit, (h, w))))
    return ts
