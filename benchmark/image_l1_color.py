"""L1 image-processing colour and pixel-format ops: RGB/gray/YUV/NV12/HSV conversions, model-input
normalisation, LUT gamma, alpha blending and Bayer demosaicing. uint8 paths use the integer
fixed-point formulas of libyuv/Android (exact); float paths use the fp32 tolerances."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag, u8
from benchmark._lib.image import stencil_np, stencil_te
from benchmark._lib.image import const_te as _c, placeholder_te as _ph, prim_func_te as _pf
from leka.tasks.task import Task

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BT601 = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])  # JPEG full range


def _sel3(k, a, b, c):
    from tvm import te

    return te.if_then_else(k == 0, a, te.if_then_else(k == 1, b, c))


def gray_u8_def(h, w):
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    i32 = lambda y, x, k: X[y, x, k].astype("int32")  # noqa: E731
    return _pf(X, te.compute((h, w), lambda y, x: ((i32(y, x, 0) * 77 + i32(y, x, 1) * 150 + i32(y, x, 2) * 29 + 128)
                                                   >> 8).astype("uint8"), name="Y"))


def gray_u8_ref(x):
    x = x.astype(np.int32)
    return (x[..., 0] * 77 + x[..., 1] * 150 + x[..., 2] * 29 + 128) >> 8


def matrix3_def(h, w, m, offs=(0.0, 0.0, 0.0), rows=3):
    """Y[y,x,k] = sum_j m[k,j] * X[y,x,j] + offs[k] (rows=1 gives gray)."""
    from tvm import te

    X = _ph((h, w, 3))
    m = np.asarray(m, dtype=np.float64).reshape(rows, 3)

    def f(y, x, *k):
        if rows == 1:
            return sum(X[y, x, j] * _c(float(m[0, j])) for j in range(3))
        kk = k[0]
        return sum(X[y, x, j] * _sel3(kk, _c(float(m[0, j])), _c(float(m[1, j])), _c(float(m[2, j]))) for j in range(3)) \
            + _sel3(kk, _c(offs[0]), _c(offs[1]), _c(offs[2]))
    return _pf(X, te.compute((h, w) if rows == 1 else (h, w, 3), f, name="Y"))


def matrix3_ref(x, m, offs=(0.0, 0.0, 0.0), rows=3):
    m = np.asarray(m, dtype=np.float64).reshape(rows, 3)
    y = x.astype(np.float64) @ m.T + (np.asarray(offs) if rows == 3 else 0.0)
    return y[..., 0] if rows == 1 else y


def nv12_rgb_def(h, w):
    """Android/libyuv BT.601 limited range: C=Y-16, D=U-128, E=V-128, R=(298C+409E+128)>>8 ..."""
    from tvm import te

    Yp, UV = _ph((h, w), "uint8", "Yp"), _ph((h // 2, w), "uint8", "UV")

    def f(y, x, k):
        c = Yp[y, x].astype("int32") - 16
        d = UV[y // 2, (x // 2) * 2].astype("int32") - 128
        e = UV[y // 2, (x // 2) * 2 + 1].astype("int32") - 128
        v = _sel3(k, 298 * c + 409 * e, 298 * c - 100 * d - 208 * e, 298 * c + 516 * d) + 128
        return te.min(te.max(v >> 8, 0), 255).astype("uint8")
    return _pf(Yp, UV, te.compute((h, w, 3), f, name="RGB"))


def nv12_rgb_ref(yp, uv):
    c = yp.astype(np.int32) - 16
    d = np.repeat(np.repeat(uv[:, 0::2].astype(np.int32) - 128, 2, 0), 2, 1)
    e = np.repeat(np.repeat(uv[:, 1::2].astype(np.int32) - 128, 2, 0), 2, 1)
    rgb = np.stack([298 * c + 409 * e, 298 * c - 100 * d - 208 * e, 298 * c + 516 * d], -1) + 128
    return np.clip(rgb >> 8, 0, 255)


def rgb_nv12_def(h, w):
    """libyuv RGB -> NV12: per-pixel Y, chroma from the 2x2-averaged RGB (rounded)."""
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    i32 = lambda y, x, k: X[y, x, k].astype("int32")  # noqa: E731
    Yp = te.compute((h, w), lambda y, x: (((66 * i32(y, x, 0) + 129 * i32(y, x, 1) + 25 * i32(y, x, 2) + 128) >> 8) + 16)
                    .astype("uint8"), name="Yp")

    def avg(y, x, k):
        return (i32(2 * y, 2 * x, k) + i32(2 * y, 2 * x + 1, k) + i32(2 * y + 1, 2 * x, k) + i32(2 * y + 1, 2 * x + 1, k)
                + 2) >> 2

    def uv(y, xx):
        r, g, b = avg(y, xx // 2, 0), avg(y, xx // 2, 1), avg(y, xx // 2, 2)
        u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128
        v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128
        return te.if_then_else(xx % 2 == 0, u, v).astype("uint8")
    return _pf(X, Yp, te.compute((h // 2, w), uv, name="UV"))


def rgb_nv12_ref(x):
    x = x.astype(np.int32)
    yp = ((66 * x[..., 0] + 129 * x[..., 1] + 25 * x[..., 2] + 128) >> 8) + 16
    a = (x[0::2, 0::2] + x[0::2, 1::2] + x[1::2, 0::2] + x[1::2, 1::2] + 2) >> 2
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    uv = np.empty((x.shape[0] // 2, x.shape[1]), np.int32)
    uv[:, 0::2] = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128
    uv[:, 1::2] = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128
    return yp, uv


def hsv_def(h, w):
    """RGB in [0,1] -> HSV (H in degrees [0,360), S, V), OpenCV float formulas, fp32."""
    from tvm import te

    X = _ph((h, w, 3))

    def f(y, x, k):
        r, g, b = X[y, x, 0], X[y, x, 1], X[y, x, 2]
        v = te.max(te.max(r, g), b)
        d = v - te.min(te.min(r, g), b)
        s = te.if_then_else(v > _c(0.0), d / v, _c(0.0))
        hh = te.if_then_else(v == r, _c(60.0) * (g - b) / d,
                             te.if_then_else(v == g, _c(120.0) + _c(60.0) * (b - r) / d, _c(240.0) + _c(60.0) * (r - g) / d))
        hh = te.if_then_else(hh < _c(0.0), hh + _c(360.0), hh)
        return _sel3(k, hh, s, v)
    return _pf(X, te.compute((h, w, 3), f, name="HSV"))


def hsv_ref(x):
    x = x.astype(np.float32)  # float32 like the kernel: the hue wrap at 0/360 must pick the same side
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = np.maximum(np.maximum(r, g), b)
    d = v - np.minimum(np.minimum(r, g), b)
    s = np.where(v > 0, d / np.where(v > 0, v, 1), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        hh = np.where(v == r, np.float32(60) * (g - b) / d,
                      np.where(v == g, np.float32(120) + np.float32(60) * (b - r) / d,
                               np.float32(240) + np.float32(60) * (r - g) / d))
    hh = np.where(hh < 0, hh + np.float32(360), hh)
    return np.stack([hh, s, v], -1)


def norm_chw_def(h, w):
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    return _pf(X, te.compute((3, h, w), lambda k, y, x: (X[y, x, k].astype("float32") * _c(1 / 255.0)
                                                          - _sel3(k, *(_c(m) for m in IMAGENET_MEAN)))
                             / _sel3(k, *(_c(s) for s in IMAGENET_STD)), name="Y"))


def norm_chw_ref(x):
    y = (x.astype(np.float64) / 255.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)
    return y.transpose(2, 0, 1)


def pm1_def(h, w):
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    return _pf(X, te.compute((h, w, 3), lambda *i: X(*i).astype("float32") * _c(1 / 127.5) - _c(1.0), name="Y"))


def lut_u8_def(shape):
    from tvm import te

    X, L = _ph(shape, "uint8"), _ph((256,), "uint8", "lut")
    return _pf(X, L, te.compute(shape, lambda *i: L[X(*i).astype("int32")], name="Y"))


def blend_def(h, w):
    from tvm import te

    A, B, Al = _ph((h, w, 3), "uint8", "A"), _ph((h, w, 3), "uint8", "B"), _ph((h, w), "uint8", "alpha")
    return _pf(A, B, Al, te.compute((h, w, 3), lambda y, x, k: ((A[y, x, k].astype("int32") * Al[y, x].astype("int32")
                                                                 + B[y, x, k].astype("int32") * (255 - Al[y, x].astype("int32"))
                                                                 + 127) // 255).astype("uint8"), name="Y"))


def blend_ref(a, b, al):
    al = al.astype(np.int32)[..., None]
    return (a.astype(np.int32) * al + b.astype(np.int32) * (255 - al) + 127) // 255


K_RB = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 4.0
K_G = np.array([[0, 1, 0], [1, 4, 1], [0, 1, 0]]) / 4.0


def _bayer_masks(h, w):
    yy, xx = np.mgrid[0:h, 0:w]
    r = (yy % 2 == 0) & (xx % 2 == 0)
    b = (yy % 2 == 1) & (xx % 2 == 1)
    return r, ~(r | b), b


def demosaic_def(h, w):
    """RGGB bilinear demosaic as masked convolutions; raw is 10-bit in uint16, output float in [0,1]."""
    from tvm import te

    R = _ph((h, w), "uint16", "raw")

    def chan(k):
        def get(y, x):
            even_y, even_x = y % 2 == 0, x % 2 == 0
            keep = {0: te.all(even_y, even_x), 1: te.any(te.all(even_y, x % 2 == 1), te.all(y % 2 == 1, even_x)),
                    2: te.all(y % 2 == 1, x % 2 == 1)}[k]
            return te.if_then_else(keep, R[y, x].astype("float32") * _c(1 / 1023.0), _c(0.0))
        return get

    def f(y, x, k):
        return _sel3(k, stencil_te(chan(0), K_RB, y, x, h, w), stencil_te(chan(1), K_G, y, x, h, w),
                     stencil_te(chan(2), K_RB, y, x, h, w))
    return _pf(R, te.compute((h, w, 3), f, name="RGB"))


def demosaic_ref(raw):
    h, w = raw.shape
    v = raw.astype(np.float64) / 1023.0
    return np.stack([stencil_np(v * m, k) for m, k in zip(_bayer_masks(h, w), (K_RB, K_G, K_RB))], -1)


def _unit_inputs(shape, rng, dist):
    return [rng.uniform(0.0, 1.0, shape).astype("float32")]


def _i(pattern, tag, args, build, ref, flops, desc, dtype, **kw) -> Task:
    return make_task(level=1, pattern=pattern, tag=shape_tag(tag), domain="image-processing", args=args, build=build,
                     reference=ref, flops=flops, description=desc, dtype=dtype, layout="HWC", **kw)


def tasks() -> list[Task]:
    ts: list[Task] = []
    for h, w, src in ((480, 640, "VGA camera frame"), (240, 320, "QVGA camera frame")):
        ts.append(_i("rgb_to_gray_u8", (h, w), (u8("X", (h, w, 3)), out("Y", (h, w), "uint8")), partial(gray_u8_def, h, w),
                     gray_u8_ref, 5 * h * w, f"{src}: fixed-point (77R+150G+29B+128)>>8", "uint8"))
    gray_m = [[0.299, 0.587, 0.114]]
    for h, w, src in ((360, 640, "360p video frame"), (224, 224, "224x224 model input")):
        ts.append(_i("rgb_to_gray_f32", (h, w), (inp("X", (h, w, 3)), out("Y", (h, w))),
                     partial(matrix3_def, h, w, gray_m, rows=1), partial(matrix3_ref, m=gray_m, rows=1), 5 * h * w,
                     f"{src}: BT.601 luma in float", "float32", make_inputs=partial(_unit_inputs, (h, w, 3))))
    for h, w, src in ((240, 320, "QVGA frame"), (270, 480, "quarter-1080p frame")):
        offs = (0.0, 0.5, 0.5)
        ts.append(_i("rgb_to_yuv_bt601_f32", (h, w), (inp("X", (h, w, 3)), out("Y", (h, w, 3))),
                     partial(matrix3_def, h, w, BT601, offs), partial(matrix3_ref, m=BT601, offs=offs), 18 * h * w,
                     f"{src}: JPEG full-range YCbCr", "float32", make_inputs=partial(_unit_inputs, (h, w, 3))))
        inv = np.linalg.inv(BT601)
        inv_offs = tuple(float(v) for v in -(inv @ np.array(offs)))
        ts.append(_i("yuv_to_rgb_bt601_f32", (h, w), (inp("X", (h, w, 3)), out("Y", (h, w, 3))),
                     partial(matrix3_def, h, w, inv, inv_offs), partial(matrix3_ref, m=inv, offs=inv_offs), 18 * h * w,
                     f"{src}: JPEG full-range YCbCr -> RGB", "float32", make_inputs=partial(_unit_inputs, (h, w, 3))))
    for h, w, src in ((480, 640, "VGA camera NV12"), (720, 1280, "720p camera NV12")):
        ts.append(_i("nv12_to_rgb_u8", (h, w), (u8("Yp", (h, w)), u8("UV", (h // 2, w)), out("RGB", (h, w, 3), "uint8")),
                     partial(nv12_rgb_def, h, w), nv12_rgb_ref, 12 * h * w,
                     f"{src} -> RGB, BT.601 limited range integer (Android/libyuv)", "uint8"))
    for h, w, src in ((480, 640, "VGA RGB -> NV12 for a video encoder"), (240, 320, "QVGA RGB -> NV12")):
        ts.append(_i("rgb_to_nv12_u8", (h, w), (u8("X", (h, w, 3)), out("Yp", (h, w), "uint8"),
                                                 out("UV", (h // 2, w), "uint8")),
                     partial(rgb_nv12_def, h, w), rgb_nv12_ref, 12 * h * w, f"{src} (libyuv integer)", "uint8"))
    for h, w, src in ((240, 320, "QVGA colour tracking"), (120, 160, "QQVGA colour tracking")):
        ts.append(_i("rgb_to_hsv_f32", (h, w), (inp("X", (h, w, 3)), out("HSV", (h, w, 3))), partial(hsv_def, h, w),
                     hsv_ref, 12 * h * w, f"{src}: RGB [0,1] -> HSV (OpenCV float formulas)", "float32",
                     make_inputs=partial(_unit_inputs, (h, w, 3))))
    for h, w, src in ((224, 224, "ImageNet classifier input"), (256, 256, "segmentation input 256x256")):
        ts.append(_i("normalize_imagenet_hwc_u8_to_chw_f32", (h, w), (u8("X", (h, w, 3)), out("Y", (3, h, w))),
                     partial(norm_chw_def, h, w), norm_chw_ref, 3 * h * w * 3,
                     f"{src}: u8 HWC -> (x/255 - mean)/std, CHW float", "uint8"))
    for h, w, src in ((320, 320, "SSD-MobileDet 320 input"), (300, 300, "SSD-MobileNetV2 300 input")):
        ts.append(_i("scale_u8_to_pm1_f32", (h, w), (u8("X", (h, w, 3)), out("Y", (h, w, 3))), partial(pm1_def, h, w),
                     lambda x: x.astype(np.float64) / 127.5 - 1.0, 2 * h * w * 3,
                     f"{src}: u8 -> [-1, 1] float (HWC)", "uint8"))
    for shape, src in (((480, 640, 3), "VGA gamma / tone curve via 256-entry LUT"),
                       ((720, 1280), "720p luma tone curve via LUT")):
        ts.append(_i("lut_apply_u8", shape[:2], (u8("X", shape), u8("lut", (256,)), out("Y", shape, "uint8")),
                     partial(lut_u8_def, shape), lambda x, lut: lut[x], numel(shape), src, "uint8"))
    for h, w, src in ((480, 640, "VGA overlay/alpha compositing"), (240, 320, "QVGA alpha compositing")):
        ts.append(_i("alpha_blend_u8", (h, w), (u8("A", (h, w, 3)), u8("B", (h, w, 3)), u8("alpha", (h, w)),
                                                 out("Y", (h, w, 3), "uint8")),
                     partial(blend_def, h, w), blend_ref, 6 * h * w * 3, f"{src}: (a*A + (255-a)*B + 127) / 255", "uint8"))
    for h, w, src in ((240, 320, "QVGA RGGB 10-bit sensor"), (480, 640, "VGA RGGB 10-bit sensor")):
        ts.append(_i("demosaic_bilinear_rggb", (h, w), (inp("raw", (h, w), "uint16", low=0, high=1024),
                                                         out("RGB", (h, w, 3))),
                     partial(demosaic_def, h, w), demosaic_ref, 3 * 18 * h * w,
                     f"{src}: bilinear demosaic (masked 3x3 convolutions, reflect-101 border)", "uint16"))
    return ts
