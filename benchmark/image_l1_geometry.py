"""L1 image geometry: resize (bilinear / nearest / area / bicubic), pyramids, remap, affine and
perspective warps, crop-and-resize of detection boxes, rotation. Bilinear sampling uses replicated
borders (see benchmark/_lib/image.py)."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag, u8
from benchmark._lib.image import SAMPLE_ATOL, GAUSS5, bilinear_np, bilinear_te, clamp_te, half_pixel_np, half_pixel_te, stencil_np, stencil_te
from benchmark._lib.image import const_te as _c, placeholder_te as _ph, prim_func_te as _pf
from leka.tasks.task import Task, generate


def _get(X, nd):
    """Accessor for gray (H,W) or HWC images; returns get(y, x, *k) as float32."""
    if nd == 2:
        return lambda y, x, *k: X[y, x].astype("float32")
    return lambda y, x, *k: X[y, x, k[0]].astype("float32")


def resize_bilinear_def(shape, oh, ow, dtype):
    from tvm import te

    h, w = shape[:2]
    X = _ph(shape, dtype)
    g = _get(X, len(shape))
    oshape = (oh, ow) + tuple(shape[2:])
    return _pf(X, te.compute(oshape, lambda y, x, *k: bilinear_te(lambda a, b: g(a, b, *k), half_pixel_te(y, h / oh),
                                                                  half_pixel_te(x, w / ow), h, w), name="Y"))


def resize_bilinear_ref(x, oh, ow):
    h, w = x.shape[:2]
    fy, fx = np.meshgrid(half_pixel_np(oh, h / oh), half_pixel_np(ow, w / ow), indexing="ij")
    return bilinear_np(x, fy, fx)


def resize_nearest_def(shape, oh, ow):
    from tvm import te

    h, w = shape[:2]
    X = _ph(shape, "uint8")
    return _pf(X, te.compute((oh, ow, shape[2]), lambda y, x, k: X[(y * h) // oh, (x * w) // ow, k], name="Y"))


def resize_area_def(shape, f):
    from tvm import te

    h, w = shape[:2]
    X = _ph(shape, "uint8")
    ry, rx = te.reduce_axis((0, f), "ry"), te.reduce_axis((0, f), "rx")
    oshape = (h // f, w // f) + tuple(shape[2:])
    if len(shape) == 2:
        S = te.compute(oshape, lambda y, x: te.sum(X[y * f + ry, x * f + rx].astype("float32"), axis=[ry, rx]), name="sum")
    else:
        S = te.compute(oshape, lambda y, x, k: te.sum(X[y * f + ry, x * f + rx, k].astype("float32"), axis=[ry, rx]),
                       name="sum")
    return _pf(X, te.compute(oshape, lambda *i: S(*i) * _c(1.0 / (f * f)), name="Y"))


def resize_area_ref(x, f):
    h, w = x.shape[:2]
    return x.astype(np.float64).reshape(h // f, f, w // f, f, *x.shape[2:]).mean(axis=(1, 3))


A_CUBIC = -0.75  # OpenCV INTER_CUBIC


def _cubic_w(t):
    """Weights of taps at offsets -1, 0, 1, 2 for fractional position t (works on TE exprs and arrays)."""
    a = A_CUBIC
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def resize_bicubic_def(shape, oh, ow):
    from tvm import te

    h, w = shape[:2]
    X = _ph(shape)
    g = _get(X, len(shape))

    def f(y, x, *k):
        fy, fx = half_pixel_te(y, h / oh), half_pixel_te(x, w / ow)
        y0f, x0f = te.floor(fy), te.floor(fx)
        wy, wx = _cubic_w(fy - y0f), _cubic_w(fx - x0f)
        y0, x0 = y0f.astype("int32"), x0f.astype("int32")
        acc = None
        for i in range(4):
            row = None
            for j in range(4):
                t = g(clamp_te(y0 + i - 1, h), clamp_te(x0 + j - 1, w), *k) * wx[j]
                row = t if row is None else row + t
            acc = row * wy[i] if acc is None else acc + row * wy[i]
        return acc
    return _pf(X, te.compute((oh, ow) + tuple(shape[2:]), f, name="Y"))


def resize_bicubic_ref(x, oh, ow):
    h, w = x.shape[:2]
    fy, fx = half_pixel_np(oh, h / oh), half_pixel_np(ow, w / ow)
    y0, x0 = np.floor(fy), np.floor(fx)
    wy, wx = np.stack(_cubic_w(fy - y0), 1), np.stack(_cubic_w(fx - x0), 1)
    yi = np.clip(y0[:, None].astype(int) + np.arange(-1, 3), 0, h - 1)
    xi = np.clip(x0[:, None].astype(int) + np.arange(-1, 3), 0, w - 1)
    xf = x.astype(np.float64)
    rows = np.einsum("oi,oi...->o...", wy, xf[yi])           # (oh, W, ...)
    return np.einsum("pj,opj...->op...", wx, rows[:, xi])    # (oh, ow, ...)


def pyrdown_def(h, w):
    from tvm import te

    X = _ph((h, w))
    B = te.compute((h, w), lambda y, x: stencil_te(lambda a, b: X[a, b], GAUSS5, y, x, h, w), name="blur")
    return _pf(X, te.compute(((h + 1) // 2, (w + 1) // 2), lambda y, x: B[2 * y, 2 * x], name="Y"))


def remap_def(h, w, oh, ow):
    from tvm import te

    X, MX, MY = _ph((h, w)), _ph((oh, ow), name="map_x"), _ph((oh, ow), name="map_y")
    return _pf(X, MX, MY, te.compute((oh, ow), lambda y, x: bilinear_te(lambda a, b: X[a, b], MY[y, x], MX[y, x], h, w),
                                     name="Y"))


def _remap_inputs(h, w, rng, dist):
    """A smooth lens-like distortion field plus jitter, mostly inside the image."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    cy, cx = (h - 1) / 2, (w - 1) / 2
    r2 = ((yy - cy) ** 2 + (xx - cx) ** 2) / (cx ** 2 + cy ** 2)
    k = rng.uniform(0.05, 0.2)
    mx = cx + (xx - cx) * (1 + k * r2) + rng.normal(0, 0.3, (h, w))
    my = cy + (yy - cy) * (1 + k * r2) + rng.normal(0, 0.3, (h, w))
    return [rng.uniform(0, 1, (h, w)).astype("float32"), mx.astype("float32"), my.astype("float32")]


def warp_affine_def(h, w, oh, ow):
    """Y(y,x,k) = bilinear(X, M @ [x, y, 1]) for a 2x3 inverse map M (input), u8 -> f32."""
    from tvm import te

    X, M = _ph((h, w, 3), "uint8"), _ph((2, 3), name="M")

    def f(y, x, k):
        xf, yf = x.astype("float32"), y.astype("float32")
        sx = M[0, 0] * xf + M[0, 1] * yf + M[0, 2]
        sy = M[1, 0] * xf + M[1, 1] * yf + M[1, 2]
        return bilinear_te(lambda a, b: X[a, b, k].astype("float32"), sy, sx, h, w)
    return _pf(X, M, te.compute((oh, ow, 3), f, name="Y"))


def warp_affine_ref(x, m, oh, ow):
    yy, xx = np.mgrid[0:oh, 0:ow].astype(np.float64)
    m = m.astype(np.float64)
    return bilinear_np(x, m[1, 0] * xx + m[1, 1] * yy + m[1, 2], m[0, 0] * xx + m[0, 1] * yy + m[0, 2])


def _affine_inputs(h, w, oh, ow, rng, dist):
    ang = rng.uniform(-0.5, 0.5)
    s = rng.uniform(0.6, 1.2) * min(h / oh, w / ow) * 0.8
    c, si = np.cos(ang) * s, np.sin(ang) * s
    tx = w / 2 - (c * ow / 2 - si * oh / 2)
    ty = h / 2 - (si * ow / 2 + c * oh / 2)
    return [rng.integers(0, 256, (h, w, 3)).astype("uint8"), np.array([[c, -si, tx], [si, c, ty]], "float32")]


def warp_persp_def(h, w, oh, ow):
    from tvm import te

    X, Hm = _ph((h, w)), _ph((3, 3), name="H")

    def f(y, x):
        xf, yf = x.astype("float32"), y.astype("float32")
        z = Hm[2, 0] * xf + Hm[2, 1] * yf + Hm[2, 2]
        sx = (Hm[0, 0] * xf + Hm[0, 1] * yf + Hm[0, 2]) / z
        sy = (Hm[1, 0] * xf + Hm[1, 1] * yf + Hm[1, 2]) / z
        return bilinear_te(lambda a, b: X[a, b], sy, sx, h, w)
    return _pf(X, Hm, te.compute((oh, ow), f, name="Y"))


def warp_persp_ref(x, hm, oh, ow):
    yy, xx = np.mgrid[0:oh, 0:ow].astype(np.float64)
    hm = hm.astype(np.float64)
    z = hm[2, 0] * xx + hm[2, 1] * yy + hm[2, 2]
    return bilinear_np(x, (hm[1, 0] * xx + hm[1, 1] * yy + hm[1, 2]) / z, (hm[0, 0] * xx + hm[0, 1] * yy + hm[0, 2]) / z)


def _persp_inputs(h, w, oh, ow, rng, dist):
    """Inverse perspective map (bird's-eye view): output rows map to a trapezoid in the lower image."""
    sx, sy = w / ow, h / oh
    hm = np.array([[sx * rng.uniform(0.8, 1.0), rng.uniform(-0.2, 0.2), 0.0],
                   [0.0, sy * rng.uniform(0.5, 0.7), h * 0.3],
                   [0.0, rng.uniform(0.0005, 0.002), 1.0]])
    return [rng.uniform(0, 1, (h, w)).astype("float32"), hm.astype("float32")]


def crop_resize_def(shape, n, ch, cw):
    """TF crop_and_resize (bilinear): boxes (N,4) normalised y1,x1,y2,x2 -> (N, ch, cw, C)."""
    from tvm import te

    _, h, w, c = shape
    X, B = _ph(shape), _ph((n, 4), name="boxes")

    def f(i, y, x, k):
        sy = B[i, 0] * _c(h - 1.0) + y.astype("float32") * (B[i, 2] - B[i, 0]) * _c((h - 1.0) / (ch - 1))
        sx = B[i, 1] * _c(w - 1.0) + x.astype("float32") * (B[i, 3] - B[i, 1]) * _c((w - 1.0) / (cw - 1))
        return bilinear_te(lambda a, b: X[0, a, b, k], sy, sx, h, w)
    return _pf(X, B, te.compute((n, ch, cw, c), f, name="crops"))


def crop_resize_ref(x, boxes, ch, cw):
    _, h, w, c = x.shape
    b = boxes.astype(np.float64)
    ys = b[:, 0:1] * (h - 1) + np.arange(ch)[None] * (b[:, 2:3] - b[:, 0:1]) * (h - 1) / (ch - 1)
    xs = b[:, 1:2] * (w - 1) + np.arange(cw)[None] * (b[:, 3:4] - b[:, 1:2]) * (w - 1) / (cw - 1)
    fy = np.broadcast_to(ys[:, :, None], (len(b), ch, cw))
    fx = np.broadcast_to(xs[:, None, :], (len(b), ch, cw))
    return bilinear_np(x[0], fy, fx)


def _crop_inputs(shape, n, rng, dist):
    y1, x1 = rng.uniform(0, 0.6, n), rng.uniform(0, 0.6, n)
    boxes = np.stack([y1, x1, y1 + rng.uniform(0.1, 0.4, n), x1 + rng.uniform(0.1, 0.4, n)], 1)
    return [generate(inp("X", shape), rng, dist), boxes.astype("float32")]


def rot90_def(h, w):
    from tvm import te

    X = _ph((h, w, 3), "uint8")
    return _pf(X, te.compute((w, h, 3), lambda y, x, k: X[h - 1 - x, y, k], name="Y"))


def _unit(shape, rng, dist):
    return [rng.uniform(0.0, 1.0, shape).astype("float32")]


def _i(pattern, tag, args, build, ref, flops, desc, dtype="float32", **kw) -> Task:
    return make_task(level=1, pattern=pattern, tag=shape_tag(tag), domain="image-processing", args=args, build=build,
                     reference=ref, flops=flops, description=desc, dtype=dtype, layout="HWC", **kw)


def tasks() -> list[Task]:
    ts: list[Task] = []
    for (h, w), (oh, ow), src in (((480, 640), (224, 224), "VGA camera -> 224 classifier input"),
                                  ((240, 320), (96, 96), "QVGA camera -> 96x96 VWW input")):
        ts.append(_i("resize_bilinear_u8_to_f32", (h, w, oh, ow), (u8("X", (h, w, 3)), out("Y", (oh, ow, 3))),
                     partial(resize_bilinear_def, (h, w, 3), oh, ow, "uint8"), partial(resize_bilinear_ref, oh=oh, ow=ow),
                     8 * oh * ow * 3, f"{src} (half-pixel, RGB)", "uint8", atol=SAMPLE_ATOL))
    for (h, w), (oh, ow), src in (((720, 1280), (300, 300), "720p -> SSD 300 input"),
                                  ((480, 640), (192, 192), "VGA -> 192x192 pose/landmark input")):
        ts.append(_i("resize_nearest_u8", (h, w, oh, ow), (u8("X", (h, w, 3)), out("Y", (oh, ow, 3), "uint8")),
                     partial(resize_nearest_def, (h, w, 3), oh, ow),
                     lambda x, oh=oh, ow=ow: x[(np.arange(oh) * x.shape[0]) // oh][:, (np.arange(ow) * x.shape[1]) // ow],
                     0, f"{src} (floor(dst*in/out) nearest)", "uint8"))
    for shape, f, src in (((480, 640), 4, "VGA gray -> 160x120 (INTER_AREA, factor 4)"),
                          ((240, 320, 3), 2, "QVGA RGB -> 160x120 (INTER_AREA, factor 2)")):
        oshape = (shape[0] // f, shape[1] // f) + shape[2:]
        ts.append(_i("resize_area_u8_to_f32", shape + (f,), (u8("X", shape), out("Y", oshape)),
                     partial(resize_area_def, shape, f), partial(resize_area_ref, f=f), f * f * numel(oshape), src, "uint8"))
    for shape, (oh, ow), src in (((120, 160), (240, 320), "QQVGA -> QVGA bicubic upscale (gray)"),
                                 ((96, 96, 3), (192, 192), "96x96 RGB thumbnail 2x bicubic upscale")):
        oshape = (oh, ow) + shape[2:]
        ts.append(_i("resize_bicubic_f32", shape, (inp("X", shape), out("Y", oshape)),
                     partial(resize_bicubic_def, shape, oh, ow), partial(resize_bicubic_ref, oh=oh, ow=ow),
                     40 * numel(oshape), f"{src} (a=-0.75, half-pixel, replicate border)",
                     make_inputs=partial(_unit, shape), atol=SAMPLE_ATOL))
    for h, w, src in ((480, 640, "ORB-SLAM/ FAST pyramid VGA level"), (240, 320, "QVGA pyramid level")):
        oshape = ((h + 1) // 2, (w + 1) // 2)
        ts.append(_i("pyramid_down_gauss5_f32", (h, w), (inp("X", (h, w)), out("Y", oshape)), partial(pyrdown_def, h, w),
                     lambda x: stencil_np(x, GAUSS5)[::2, ::2], 50 * numel(oshape),
                     f"{src}: cv2.pyrDown (5x5 Gaussian, reflect-101, decimate 2)", make_inputs=partial(_unit, (h, w))))
    for (h, w), src in (((480, 640), "ORB-SLAM2 pyramid level 1 (scale 1/1.2) from VGA"),
                        ((376, 1241), "ORB-SLAM2 KITTI pyramid level 1 (scale 1/1.2)")):
        oh, ow = round(h / 1.2), round(w / 1.2)
        ts.append(_i("pyramid_level_bilinear_1p2_f32", (h, w), (inp("X", (h, w)), out("Y", (oh, ow))),
                     partial(resize_bilinear_def, (h, w), oh, ow, "float32"), partial(resize_bilinear_ref, oh=oh, ow=ow),
                     8 * oh * ow, f"{src} -> {oh}x{ow} bilinear", make_inputs=partial(_unit, (h, w)), atol=SAMPLE_ATOL))
    for h, w, src in ((480, 640, "VGA lens undistortion remap"), (376, 620, "KITTI half-width rectification remap")):
        ts.append(_i("remap_bilinear_f32", (h, w), (inp("X", (h, w)), inp("map_x", (h, w)), inp("map_y", (h, w)),
                                                     out("Y", (h, w))),
                     partial(remap_def, h, w, h, w), lambda x, mx, my: bilinear_np(x, my.astype(np.float64),
                                                                                   mx.astype(np.float64)),
                     10 * h * w, f"{src} (cv2.remap INTER_LINEAR, replicate border)",
                     make_inputs=partial(_remap_inputs, h, w), atol=SAMPLE_ATOL))
    for (h, w), (oh, ow), src in (((480, 640), (112, 112), "face alignment crop 112x112 from VGA (similarity warp)"),
                                  ((240, 320), (240, 320), "QVGA rotation/stabilisation warp")):
        ts.append(_i("warp_affine_bilinear_u8_to_f32", (h, w, oh, ow), (u8("X", (h, w, 3)), inp("M", (2, 3)),
                                                                        out("Y", (oh, ow, 3))),
                     partial(warp_affine_def, h, w, oh, ow), partial(warp_affine_ref, oh=oh, ow=ow), 14 * oh * ow * 3,
                     src, "uint8", make_inputs=partial(_affine_inputs, h, w, oh, ow), atol=SAMPLE_ATOL))
    for (h, w), (oh, ow), src in (((480, 640), (200, 200), "lane detection bird's-eye view (IPM) 200x200 from VGA"),
                                  ((360, 640), (160, 320), "360p bird's-eye view 160x320")):
        ts.append(_i("warp_perspective_bilinear_f32", (h, w, oh, ow), (inp("X", (h, w)), inp("H", (3, 3)),
                                                                       out("Y", (oh, ow))),
                     partial(warp_persp_def, h, w, oh, ow), partial(warp_persp_ref, oh=oh, ow=ow), 20 * oh * ow, src,
                     make_inputs=partial(_persp_inputs, h, w, oh, ow), atol=SAMPLE_ATOL))
    for shape, n, (ch, cw), src in (((1, 38, 50, 64), 32, (14, 14), "two-stage detector: 32 RoIs, 14x14 crops of 64-ch features"),
                                    ((1, 240, 320, 3), 8, (96, 96), "8 person crops 96x96 from a QVGA frame for re-ID")):
        ts.append(_i("crop_and_resize_bilinear", (n, ch, cw, shape[3]), (inp("X", shape), inp("boxes", (n, 4)),
                                                                         out("crops", (n, ch, cw, shape[3]))),
                     partial(crop_resize_def, shape, n, ch, cw), partial(crop_resize_ref, ch=ch, cw=cw),
                     10 * n * ch * cw * shape[3], f"{src} (TF crop_and_resize, bilinear)",
                     make_inputs=partial(_crop_inputs, shape, n), atol=SAMPLE_ATOL))
    for h, w, src in ((480, 640, "VGA portrait-mode camera rotation"), (720, 1280, "720p camera rotation")):
        ts.append(_i("rotate90_cw_u8", (h, w), (u8("X", (h, w, 3)), out("Y", (w, h, 3), "uint8")), partial(rot90_def, h, w),
                     lambda x: np.rot90(x, k=-1), 0, f"{src}: 90 degrees clockwise", "uint8"))
    return ts
