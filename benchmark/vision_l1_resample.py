"""L1 vision resampling: nearest / bilinear upsampling (half-pixel and align_corners), grid sampling
(spatial transformer, border padding) and reflection padding."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, numel, out
from benchmark._lib.image import (align_corners_np, align_corners_te, bilinear_np, bilinear_te, half_pixel_np,
                                  half_pixel_te, reflect101_te)
from benchmark.vision_l1_tensor import _f, _pf, _ph, _t
from leka.tasks.task import Task


def pad_reflect_def(shape, p):
    """NCHW reflection padding by p on both spatial sides (PyTorch ReflectionPad2d)."""
    from tvm import te

    n, c, h, w = shape
    X = _ph(shape)
    Y = te.compute((n, c, h + 2 * p, w + 2 * p),
                   lambda b, k, y, x: X[b, k, reflect101_te(y - p, h), reflect101_te(x - p, w)], name="Y")
    return _pf([X], [Y])


def upsample_nearest_def(shape, r):
    from tvm import te

    n, h, w, c = shape
    X = _ph(shape)
    return _pf([X], [te.compute((n, h * r, w * r, c), lambda b, y, x, k: X[b, y // r, x // r, k], name="Y")])


def resize_bilinear_def(shape, oh, ow, layout, align_corners):
    from tvm import te

    if layout == "NHWC":
        n, h, w, c = shape
        oshape = (n, oh, ow, c)
    else:
        n, c, h, w = shape
        oshape = (n, c, oh, ow)
    X = _ph(shape)

    def coord(d, n_in, n_out):
        return align_corners_te(d, n_in, n_out) if align_corners else half_pixel_te(d, n_in / n_out)
    if layout == "NHWC":
        f = lambda b, y, x, k: bilinear_te(lambda yi, xi: X[b, yi, xi, k], coord(y, h, oh), coord(x, w, ow), h, w)  # noqa
    else:
        f = lambda b, k, y, x: bilinear_te(lambda yi, xi: X[b, k, yi, xi], coord(y, h, oh), coord(x, w, ow), h, w)  # noqa
    return _pf([X], [te.compute(oshape, f, name="Y")])


def resize_bilinear_ref(x, oh, ow, layout, align_corners):
    img = x[0] if layout == "NHWC" else x[0].transpose(1, 2, 0)
    h, w = img.shape[:2]
    cy = align_corners_np(h, oh) if align_corners else half_pixel_np(oh, h / oh)
    cx = align_corners_np(w, ow) if align_corners else half_pixel_np(ow, w / ow)
    fy, fx = np.meshgrid(cy, cx, indexing="ij")
    y = bilinear_np(img, fy, fx)
    return y[None] if layout == "NHWC" else y.transpose(2, 0, 1)[None]


def grid_sample_def(shape, oh, ow):
    """PyTorch grid_sample(bilinear, padding_mode='border', align_corners=False)."""
    from tvm import te

    n, c, h, w = shape
    X, Gd = _ph(shape), _ph((n, oh, ow, 2), "grid")

    def f(b, k, y, x):
        fx = (Gd[b, y, x, 0] + _f(1.0)) * _f(w / 2.0) - _f(0.5)
        fy = (Gd[b, y, x, 1] + _f(1.0)) * _f(h / 2.0) - _f(0.5)
        return bilinear_te(lambda yi, xi: X[b, k, yi, xi], fy, fx, h, w)
    return _pf([X, Gd], [te.compute((n, c, oh, ow), f, name="Y")])


def grid_sample_ref(x, grid):
    n, c, h, w = x.shape
    fx = (grid[0, ..., 0].astype(np.float64) + 1) * w / 2 - 0.5
    fy = (grid[0, ..., 1].astype(np.float64) + 1) * h / 2 - 0.5
    fx, fy = np.clip(fx, 0, w - 1), np.clip(fy, 0, h - 1)  # border padding == clamped coordinates
    return bilinear_np(x[0].transpose(1, 2, 0), fy, fx).transpose(2, 0, 1)[None]


def _grid_inputs(shape, oh, ow, rng, dist):
    from leka.tasks.task import generate

    ys, xs = np.meshgrid(np.linspace(-1, 1, oh), np.linspace(-1, 1, ow), indexing="ij")
    base = np.stack([xs, ys], -1)  # identity grid + a smooth warp + jitter, slightly beyond [-1, 1]
    grid = base * 1.05 + 0.1 * np.sin(3 * base[..., ::-1]) + rng.normal(0, 0.02, base.shape)
    return [generate(inp("X", shape), rng, dist), grid[None].astype("float32")]


def tasks() -> list[Task]:
    ts: list[Task] = []
    for s, p, src in (((1, 3, 128, 128), 4, "fast style transfer input reflection pad 4"),
                      ((1, 64, 32, 32), 1, "style-transfer residual block reflection pad 1")):
        os_ = (1, s[1], s[2] + 2 * p, s[3] + 2 * p)
        ts.append(_t("pad_reflect_nchw", s[1:], (inp("X", s), out("Y", os_)), partial(pad_reflect_def, s, p),
                     lambda x, p=p: np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode="reflect"), 0, src, "NCHW"))
    for s, src in (((1, 13, 13, 128), "YOLOv3-tiny neck 2x nearest upsample"),
                   ((1, 40, 40, 64), "YOLOv5n@640 PAN 2x nearest upsample")):
        os_ = (1, 2 * s[1], 2 * s[2], s[3])
        ts.append(_t("upsample_nearest2x_nhwc", s[1:], (inp("X", s), out("Y", os_)), partial(upsample_nearest_def, s, 2),
                     lambda x: x.repeat(2, axis=1).repeat(2, axis=2), 0, src))
    for pattern, layout, ac, entries in (
            ("upsample_bilinear2x_nchw", "NCHW", False, [((1, 64, 32, 32), 64, 64, "FPN top-down bilinear 2x"),
                                                         ((1, 19, 64, 64), 128, 128, "segmentation logits 2x bilinear")]),
            ("resize_bilinear_align_corners_nhwc", "NHWC", True, [
                ((1, 33, 33, 21), 129, 129, "DeepLabv3 TF logits resize (align_corners) 33 -> 129"),
                ((1, 17, 17, 32), 65, 65, "DeepLabv3 decoder resize (align_corners) 17 -> 65")])):
        for s, oh, ow, src in entries:
            os_ = (1, s[1], oh, ow) if layout == "NCHW" else (1, oh, ow, s[3])
            ts.append(_t(pattern, s[1:], (inp("X", s), out("Y", os_)), partial(resize_bilinear_def, s, oh, ow, layout, ac),
                         partial(resize_bilinear_ref, oh=oh, ow=ow, layout=layout, align_corners=ac), 8 * numel(os_),
                         src, layout))
    for s, oh, ow, src in (((1, 16, 32, 32), 32, 32, "spatial transformer / flow warp of a 16-ch feature map"),
                           ((1, 3, 64, 64), 48, 48, "spatial transformer crop-warp of a 64x64 RGB input")):
        ts.append(_t("grid_sample_bilinear_nchw", s[1:], (inp("X", s), inp("grid", (1, oh, ow, 2)),
                                                           out("Y", (1, s[1], oh, ow))),
                     partial(grid_sample_def, s, oh, ow), grid_sample_ref, 10 * s[1] * oh * ow,
                     f"{src} (bilinear, border padding)", "NCHW", make_inputs=partial(_grid_inputs, s, oh, ow)))
    return ts
