"""Image-processing building blocks: border handling, bilinear sampling, fixed-weight stencils.

Bilinear sampling clamps integer neighbour indices to the image (OpenCV BORDER_REPLICATE); for
resize this equals PyTorch's half-pixel rule with negative source coordinates clamped to 0, so one
sampler serves resize, remap, warps and grid_sample. Stencils default to BORDER_REFLECT_101
(OpenCV's default; NumPy's pad mode "reflect").
"""
from __future__ import annotations

from typing import Callable

import numpy as np

GAUSS5 = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]) / 256.0  # cv2.pyrDown / getGaussianKernel(5, 0) approx
GAUSS3 = np.outer([1, 2, 1], [1, 2, 1]) / 16.0
SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64)
SOBEL_Y = SOBEL_X.T.copy()
LAPLACE = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64)


def clamp_te(i, n: int):
    from tvm import te

    return te.min(te.max(i, 0), n - 1)


def reflect101_te(i, n: int):
    from tvm import te

    return te.if_then_else(i < 0, -i, te.if_then_else(i >= n, 2 * n - 2 - i, i))


def bilinear_te(get: Callable, fy, fx, H: int, W: int):
    """Sample get(yi, xi) at float32 coordinates (fy, fx) with replicated borders."""
    from tvm import te, tirx

    one = tirx.const(1.0, "float32")
    y0f, x0f = te.floor(fy), te.floor(fx)
    wy, wx = fy - y0f, fx - x0f
    y0, x0 = y0f.astype("int32"), x0f.astype("int32")
    ya, yb = clamp_te(y0, H), clamp_te(y0 + 1, H)
    xa, xb = clamp_te(x0, W), clamp_te(x0 + 1, W)
    top = get(ya, xa) * (one - wx) + get(ya, xb) * wx
    bot = get(yb, xa) * (one - wx) + get(yb, xb) * wx
    return top * (one - wy) + bot * wy


def bilinear_np(img: np.ndarray, fy: np.ndarray, fx: np.ndarray) -> np.ndarray:
    """img (H, W, ...) sampled at arrays fy, fx (same shape S) -> (S..., ...) in float64."""
    H, W = img.shape[:2]
    f = img.astype(np.float64)
    y0, x0 = np.floor(fy), np.floor(fx)
    wy, wx = fy - y0, fx - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    ya, yb = np.clip(y0, 0, H - 1), np.clip(y0 + 1, 0, H - 1)
    xa, xb = np.clip(x0, 0, W - 1), np.clip(x0 + 1, 0, W - 1)
    extra = (None,) * (img.ndim - 2)
    wy, wx = wy[(...,) + extra], wx[(...,) + extra]
    top = f[ya, xa] * (1 - wx) + f[ya, xb] * wx
    bot = f[yb, xa] * (1 - wx) + f[yb, xb] * wx
    return top * (1 - wy) + bot * wy


def half_pixel_te(dst, scale: float):
    """Source coordinate of output index `dst` (align_corners=False)."""
    from tvm import tirx

    return (dst.astype("float32") + tirx.const(0.5, "float32")) * tirx.const(scale, "float32") - tirx.const(0.5, "float32")


def half_pixel_np(n_out: int, scale: float) -> np.ndarray:
    return (np.arange(n_out, dtype=np.float64) + 0.5) * scale - 0.5


def align_corners_te(dst, n_in: int, n_out: int):
    from tvm import tirx

    return dst.astype("float32") * tirx.const((n_in - 1) / (n_out - 1), "float32")


def align_corners_np(n_in: int, n_out: int) -> np.ndarray:
    return np.arange(n_out, dtype=np.float64) * ((n_in - 1) / (n_out - 1))


def stencil_te(get: Callable, weights: np.ndarray, y, x, H: int, W: int, border: str = "reflect101"):
    """Sum_ij w[i,j] * get(y+i-r, x+j-r), with border index remapping; zero weights are skipped."""
    from tvm import tirx

    kh, kw = weights.shape
    fix = reflect101_te if border == "reflect101" else clamp_te
    acc = None
    for i in range(kh):
        for j in range(kw):
            w = float(weights[i, j])
            if w == 0.0:
                continue
            term = get(fix(y + (i - kh // 2), H), fix(x + (j - kw // 2), W)) * tirx.const(w, "float32")
            acc = term if acc is None else acc + term
    return acc


def stencil_np(img: np.ndarray, weights: np.ndarray, border: str = "reflect101") -> np.ndarray:
    kh, kw = weights.shape
    H, W = img.shape[:2]
    pad = [(kh // 2, kh // 2), (kw // 2, kw // 2)] + [(0, 0)] * (img.ndim - 2)
    p = np.pad(img.astype(np.float64), pad, mode="reflect" if border == "reflect101" else "edge")
    out = np.zeros((H, W) + img.shape[2:])
    for i in range(kh):
        for j in range(kw):
            if weights[i, j] != 0.0:
                out += weights[i, j] * p[i:i + H, j:j + W]
    return out


def window_reduce_np(img: np.ndarray, k: int, op: str, border: str = "reflect101") -> np.ndarray:
    """k x k min / max / sum over a same-size window."""
    H, W = img.shape[:2]
    r = k // 2
    p = np.pad(img, [(r, r), (r, r)] + [(0, 0)] * (img.ndim - 2), mode="reflect" if border == "reflect101" else "edge")
    if op in ("min", "max"):
        red = np.minimum if op == "min" else np.maximum
        acc = p[0:H, 0:W].copy()
        for i in range(k):
            for j in range(k):
                red(acc, p[i:i + H, j:j + W], out=acc)
        return acc
    rows = sum(p[i:i + H].astype(np.float64 if p.dtype.kind == "f" else np.int64) for i in range(k))  # separable box sum
    return sum(rows[:, j:j + W] for j in range(k))


# Sampling positions are float32 by definition of these kernels; a coordinate near x carries an
# error ~ x * 2**-24, which moves an interpolated value by up to that times the neighbour difference.
# For images up to ~1300 px that is <= 1e-4 of the value range, so sampling tasks use atol_scale 3e-4
# (still far below any real interpolation mistake such as a half-pixel shift).
SAMPLE_ATOL = 3e-4


# Short TE helpers shared by the image modules (imports inside: task listing must not load TVM).
def const_te(v, dt="float32"):
    from tvm import tirx

    return tirx.const(v, dt)


def placeholder_te(shape, dtype="float32", name="X"):
    from tvm import te

    return te.placeholder(shape, dtype, name=name)


def prim_func_te(*ts):
    from tvm import te

    return te.create_prim_func(list(ts))
