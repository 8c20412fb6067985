"""L1 vision tensor ops: channel shuffle, concat, residual add, SE scale, depth/space rearrangements,
layout transforms, per-pixel softmax/argmax and normalisations (L2, LRN, instance, group).
Resampling lives in vision_l1_resample.py, detection post-processing in vision_l1_detect.py."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, numel, out, shape_tag
from leka.tasks.task import Task


def _f(v):
    from tvm import tirx

    return tirx.const(v, "float32")


def _pf(ins, outs):
    from tvm import te

    return te.create_prim_func(list(ins) + list(outs))


def _ph(shape, name="X", dtype="float32"):
    from tvm import te

    return te.placeholder(shape, dtype, name=name)


# --- data movement -------------------------------------------------------------------------------
def shuffle_def(shape, g, layout):
    from tvm import te

    X = _ph(shape)
    ax = 3 if layout == "NHWC" else 1
    cg = shape[ax] // g

    def f(*i):
        j = list(i)
        j[ax] = (i[ax] % g) * cg + i[ax] // g
        return X(*j)
    return _pf([X], [te.compute(shape, f, name="Y")])


def shuffle_ref(x, g, layout):
    ax = 3 if layout == "NHWC" else 1
    s = list(x.shape)
    y = np.moveaxis(x, ax, -1).reshape(*np.moveaxis(x, ax, -1).shape[:-1], g, s[ax] // g)
    y = np.swapaxes(y, -1, -2).reshape(np.moveaxis(x, ax, -1).shape)
    return np.moveaxis(y, -1, ax)


def concat_def(shapes, ax):
    from tvm import te

    Xs = [_ph(s, f"X{i}") for i, s in enumerate(shapes)]
    oshape = list(shapes[0])
    oshape[ax] = sum(s[ax] for s in shapes)
    offs = np.cumsum([0] + [s[ax] for s in shapes]).tolist()

    def f(*i):
        val = None
        for k in range(len(Xs)):
            j = list(i)
            j[ax] = i[ax] - offs[k]
            v = Xs[k](*j)
            val = v if val is None else te.if_then_else(i[ax] >= offs[k], v, val)
        return val
    return _pf(Xs, [te.compute(tuple(oshape), f, name="Y")])


def binary_def(shape, op, dtype, bshape=None):
    from tvm import te

    A, B = _ph(shape, "A", dtype), _ph(bshape or shape, "B", dtype)
    if bshape:  # broadcast over all but the last axis (NHWC channel scale)
        Y = te.compute(shape, lambda *i: A(*i) * B(*([0] * (len(shape) - 1) + [i[-1]])), name="Y")
    else:
        Y = te.compute(shape, lambda *i: ((A(*i).astype("float32") + B(*i).astype("float32")) if op == "add"
                                          else A(*i).astype("float32") * B(*i).astype("float32")).astype(dtype), name="Y")
    return _pf([A, B], [Y])


def d2s_def(shape, r):
    from tvm import te

    n, h, w, c = shape
    co = c // (r * r)
    X = _ph(shape)
    Y = te.compute((n, h * r, w * r, co), lambda b, y, x, k: X[b, y // r, x // r, ((y % r) * r + x % r) * co + k],
                   name="Y")
    return _pf([X], [Y])


def d2s_ref(x, r):
    n, h, w, c = x.shape
    co = c // (r * r)
    return x.reshape(n, h, w, r, r, co).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * r, w * r, co)


def focus_def(shape):
    from tvm import te

    n, h, w, c = shape
    X = _ph(shape)
    # YOLOv5 Focus: concat(x[::2,::2], x[1::2,::2], x[::2,1::2], x[1::2,1::2]) on channels
    Y = te.compute((n, h // 2, w // 2, 4 * c), lambda b, y, x, k: X[b, 2 * y + (k // c) % 2, 2 * x + (k // c) // 2, k % c],
                   name="Y")
    return _pf([X], [Y])


def focus_ref(x):
    return np.concatenate([x[:, ::2, ::2], x[:, 1::2, ::2], x[:, ::2, 1::2], x[:, 1::2, 1::2]], axis=3)


def transpose_def(shape, perm):
    from tvm import te

    X = _ph(shape)
    oshape = tuple(shape[p] for p in perm)
    inv = np.argsort(perm).tolist()
    return _pf([X], [te.compute(oshape, lambda *i: X(*[i[inv[a]] for a in range(len(shape))]), name="Y")])


def nchw4c_def(shape):
    from tvm import te

    n, c, h, w = shape
    X = _ph(shape)
    return _pf([X], [te.compute((n, c // 4, h, w, 4), lambda b, co, y, x, ci: X[b, co * 4 + ci, y, x], name="Y")])


# --- per-pixel reductions and normalisations ----------------------------------------------------
def softmax_ch_def(shape):
    from tvm import te

    n, c, h, w = shape
    X = _ph(shape)
    k1, k2 = te.reduce_axis((0, c), "k1"), te.reduce_axis((0, c), "k2")
    M = te.compute((n, h, w), lambda b, y, x: te.max(X[b, k1, y, x], axis=k1), name="cmax")
    E = te.compute(shape, lambda b, k, y, x: te.exp(X[b, k, y, x] - M[b, y, x]), name="exp")
    S = te.compute((n, h, w), lambda b, y, x: te.sum(E[b, k2, y, x], axis=k2), name="csum")
    return _pf([X], [te.compute(shape, lambda b, k, y, x: E[b, k, y, x] / S[b, y, x], name="Y")])


def softmax_ch_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def argmax_def(shape, ax):
    from tvm import te, tirx

    X = _ph(shape)
    C = shape[ax]
    oshape = tuple(s for a, s in enumerate(shape) if a != ax)
    k1, k2 = te.reduce_axis((0, C), "k1"), te.reduce_axis((0, C), "k2")

    def at(i, k):
        j = list(i)
        j.insert(ax, k)
        return X(*j)
    M = te.compute(oshape, lambda *i: te.max(at(i, k1), axis=k1), name="vmax")
    # first index attaining the max (np.argmax tie rule), via a min-reduction over matching indices
    Y = te.compute(oshape, lambda *i: te.min(te.if_then_else(at(i, k2) == M(*i), k2, tirx.const(C, "int32")), axis=k2),
                   name="Y")
    return _pf([X], [Y])


def l2norm_def(shape, eps=1e-10):
    from tvm import te

    n, h, w, c = shape
    X, G = _ph(shape), _ph((c,), "gamma")
    k = te.reduce_axis((0, c), "k")
    S = te.compute((n, h, w), lambda b, y, x: te.sum(X[b, y, x, k] * X[b, y, x, k], axis=k), name="sumsq")
    Y = te.compute(shape, lambda b, y, x, ch: X[b, y, x, ch] * G[ch] / te.sqrt(S[b, y, x] + _f(eps)), name="Y")
    return _pf([X, G], [Y])


def l2norm_ref(x, g, eps=1e-10):
    return x * g / np.sqrt((x.astype(np.float64) ** 2).sum(axis=3, keepdims=True) + eps)


LRN = dict(size=5, alpha=1e-4, beta=0.75, k=2.0)  # AlexNet


def lrn_def(shape):
    from tvm import te

    n, c, h, w = shape
    X = _ph(shape)
    half = LRN["size"] // 2
    r = te.reduce_axis((0, LRN["size"]), "r")

    def sq(b, k, y, x):
        ch = k + r - half
        return te.sum(te.if_then_else(te.all(ch >= 0, ch < c), X[b, ch, y, x] * X[b, ch, y, x], _f(0.0)),
                      axis=r)
    S = te.compute(shape, sq, name="sumsq")
    Y = te.compute(shape, lambda *i: X(*i) / te.power(_f(LRN["k"]) + _f(LRN["alpha"] / LRN["size"]) * S(*i),
                                                       _f(LRN["beta"])), name="Y")
    return _pf([X], [Y])


def lrn_ref(x):
    c = x.shape[1]
    half = LRN["size"] // 2
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (half, half), (0, 0), (0, 0)))
    s = sum(sq[:, i:i + c] for i in range(LRN["size"]))
    return x / (LRN["k"] + LRN["alpha"] / LRN["size"] * s) ** LRN["beta"]


def _sq(v):
    return v * v


def groupnorm_def(shape, groups, eps=1e-5):
    """Instance norm is groups == C. Mean then centred variance (two passes, numerically safe)."""
    from tvm import te

    n, c, h, w = shape
    cg = c // groups
    X, G, B = _ph(shape), _ph((c,), "gamma"), _ph((c,), "beta")
    rc, ry, rx = te.reduce_axis((0, cg), "rc"), te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
    cnt = _f(float(cg * h * w))
    S = te.compute((n, groups), lambda b, g: te.sum(X[b, g * cg + rc, ry, rx], axis=[rc, ry, rx]), name="gsum")
    qc, qy, qx = te.reduce_axis((0, cg), "qc"), te.reduce_axis((0, h), "qy"), te.reduce_axis((0, w), "qx")
    V = te.compute((n, groups), lambda b, g: te.sum(_sq(X[b, g * cg + qc, qy, qx] - S[b, g] / cnt), axis=[qc, qy, qx]),
                   name="gvar")
    Y = te.compute(shape, lambda b, k, y, x: (X[b, k, y, x] - S[b, k // cg] / cnt) / te.sqrt(V[b, k // cg] / cnt + _f(eps))
                   * G[k] + B[k], name="Y")
    return _pf([X, G, B], [Y])


def groupnorm_ref(x, g, b, groups, eps=1e-5):
    n, c, h, w = x.shape
    xg = x.astype(np.float64).reshape(n, groups, -1)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    return y.reshape(n, c, h, w) * g.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


def _gn_inputs(shape, rng, dist):
    from leka.tasks.task import generate

    c = shape[1]
    return [generate(inp("X", shape), rng, dist), rng.uniform(0.5, 1.5, c).astype("float32"),
            rng.normal(0, 0.5, c).astype("float32")]


def _t(pattern, shape_for_tag, args, build, ref, flops, desc, layout="NHWC", dtype="float32", **kw) -> Task:
    return make_task(level=1, pattern=pattern, tag=shape_tag(shape_for_tag), domain="vision", args=args, build=build,
                     reference=ref, flops=flops, description=desc, layout=layout, dtype=dtype, **kw)


def tasks() -> list[Task]:
    ts: list[Task] = []
    for pattern, g, layout, shapes in (
            ("channel_shuffle_g2_nhwc", 2, "NHWC", [((1, 28, 28, 116), "ShuffleNetV2 1.0x stage 2"),
                                                    ((1, 14, 14, 232), "ShuffleNetV2 1.0x stage 3")]),
            ("channel_shuffle_g3_nchw", 3, "NCHW", [((1, 240, 28, 28), "ShuffleNetV1 g3 stage 2"),
                                                    ((1, 480, 14, 14), "ShuffleNetV1 g3 stage 3")])):
        for s, src in shapes:
            ts.append(_t(pattern, s[1:], (inp("X", s), out("Y", s)), partial(shuffle_def, s, g, layout),
                         partial(shuffle_ref, g=g, layout=layout), 0, f"channel shuffle g{g}: {src}", layout))
    for pattern, ax, layout, groups in (
            ("concat2_channels_nhwc", 3, "NHWC", [([(1, 28, 28, 58)] * 2, "ShuffleNetV2 stage-2 branch concat"),
                                                  ([(1, 55, 55, 64)] * 2, "SqueezeNet fire2 expand concat")]),
            ("concat4_channels_nchw", 1, "NCHW", [([(1, 128, 10, 10)] * 4, "YOLOv5n SPPF 4-way concat at 320"),
                                                  ([(1, 64, 35, 35), (1, 64, 35, 35), (1, 96, 35, 35), (1, 32, 35, 35)],
                                                   "Inception-v3 mixed_5b branch concat")])):
        for shapes, src in groups:
            oshape = list(shapes[0])
            oshape[ax] = sum(s[ax] for s in shapes)
            ts.append(_t(pattern, oshape[1:], [inp(f"X{i}", s) for i, s in enumerate(shapes)] + [out("Y", oshape)],
                         partial(concat_def, shapes, ax), lambda *xs, ax=ax: np.concatenate(xs, axis=ax), 0,
                         f"channel concat: {src}", layout))
    for pattern, dtype, s, src in (("add_residual_nhwc", "float32", (1, 32, 32, 16), "ResNet-8 residual add"),
                                   ("add_residual_nhwc", "float32", (1, 14, 14, 96), "MobileNetV2 residual add 14x14x96"),
                                   ("add_residual_nhwc_f16", "float16", (1, 28, 28, 32), "MobileNetV2 residual fp16"),
                                   ("add_residual_nhwc_f16", "float16", (1, 56, 56, 24), "MobileNetV2 residual fp16 56")):
        ts.append(_t(pattern, s[1:], (inp("A", s, dtype), inp("B", s, dtype), out("Y", s, dtype)),
                     partial(binary_def, s, "add", dtype), lambda a, b: a.astype("float64") + b, numel(s),
                     f"elementwise residual add: {src}", dtype=dtype))
    for s, src in (((1, 14, 14, 96), "MobileNetV3 SE channel scale 14x14x96"),
                   ((1, 28, 28, 72), "MobileNetV3 SE channel scale 28x28x72")):
        bs = (1, 1, 1, s[3])
        ts.append(_t("channel_scale_nhwc", s[1:], (inp("A", s), inp("B", bs), out("Y", s)),
                     partial(binary_def, s, "mul", "float32", bs), lambda a, b: a * b, numel(s),
                     f"broadcast per-channel multiply: {src}"))
    for s, src in (((1, 32, 32, 256), "EDSR-baseline x2 upsampler (depth_to_space r=2)"),
                   ((1, 96, 96, 4), "ESPCN x2 output (1-channel, r=2)")):
        os_ = (1, s[1] * 2, s[2] * 2, s[3] // 4)
        ts.append(_t("depth_to_space_x2_nhwc", s[1:], (inp("X", s), out("Y", os_)), partial(d2s_def, s, 2),
                     partial(d2s_ref, r=2), 0, f"pixel shuffle / depth_to_space (DCR): {src}"))
    for s, src in (((1, 320, 320, 3), "YOLOv5 Focus at 320"), ((1, 256, 256, 3), "YOLOv5 Focus at 256")):
        os_ = (1, s[1] // 2, s[2] // 2, 4 * s[3])
        ts.append(_t("focus_space_to_depth_nhwc", s[1:], (inp("X", s), out("Y", os_)), partial(focus_def, s),
                     focus_ref, 0, f"space-to-depth by strided slicing + concat: {src}"))
    for s, src in (((1, 28, 28, 96), "NHWC->NCHW handoff 28x28x96 (TFLite model to NCHW GPU kernels)"),
                   ((1, 112, 112, 16), "NHWC->NCHW handoff at 112x112x16")):
        os_ = (1, s[3], s[1], s[2])
        ts.append(_t("transpose_nhwc_to_nchw", s[1:], (inp("X", s), out("Y", os_)),
                     partial(transpose_def, s, (0, 3, 1, 2)), lambda x: x.transpose(0, 3, 1, 2), 0,
                     f"layout transform: {src}"))
    for s, src in (((1, 64, 28, 28), "NCHW -> NCHW4c packing (TVM x86/ARM conv layout) 64x28x28"),
                   ((1, 32, 56, 56), "NCHW -> NCHW4c packing 32x56x56")):
        os_ = (1, s[1] // 4, s[2], s[3], 4)
        ts.append(_t("layout_nchw_to_nchw4c", s[1:], (inp("X", s), out("Y", os_)), partial(nchw4c_def, s),
                     lambda x: x.reshape(1, x.shape[1] // 4, 4, x.shape[2], x.shape[3]).transpose(0, 1, 3, 4, 2), 0,
                     src, "NCHW"))
    for s, src in (((1, 21, 65, 65), "DeepLabv3 (VOC 21 classes) per-pixel softmax at 65x65"),
                   ((1, 19, 64, 128), "Cityscapes 19-class per-pixel softmax at 64x128")):
        ts.append(_t("softmax_channel_nchw", s[1:], (inp("X", s), out("Y", s)), partial(softmax_ch_def, s),
                     softmax_ch_ref, 5 * numel(s), src, "NCHW"))
    for pattern, ax, layout, shapes in (
            ("argmax_channel_nhwc", 3, "NHWC", [((1, 65, 65, 21), "DeepLabv3 VOC label map 65x65"),
                                                ((1, 128, 128, 32), "MOSAIC-like 32-class label map 128x128")]),
            ("argmax_channel_nchw", 1, "NCHW", [((1, 19, 64, 128), "Cityscapes label map 64x128"),
                                                ((1, 31, 64, 64), "MOSAIC 31-class label map 64x64")])):
        for s, src in shapes:
            os_ = tuple(v for a, v in enumerate(s) if a != ax)
            ts.append(_t(pattern, s[1:], (inp("X", s), out("Y", os_, "int32")), partial(argmax_def, s, ax),
                         lambda x, ax=ax: np.argmax(x, axis=ax), 2 * numel(s), f"class argmax: {src}", layout))
    for s, src in (((1, 38, 38, 128), "SSD conv4_3 L2Normalize with learned scale (128-ch lite)"),
                   ((1, 19, 19, 256), "SSD-style L2Normalize at 19x19x256")):
        ts.append(_t("l2norm_channel_nhwc", s[1:], (inp("X", s), inp("gamma", (s[3],), dist="positive"), out("Y", s)),
                     partial(l2norm_def, s), l2norm_ref, 4 * numel(s), src))
    for s, src in (((1, 64, 56, 56), "GoogLeNet conv1 LRN (size 5)"), ((1, 96, 27, 27), "AlexNet-style LRN 96x27x27")):
        ts.append(_t("lrn_across_channels_nchw", s[1:], (inp("X", s), out("Y", s)), partial(lrn_def, s), lrn_ref,
                     8 * numel(s), f"{src}; alpha 1e-4 beta 0.75 k 2", "NCHW"))
    for pattern, groups_of, shapes in (
            ("instance_norm_nchw", lambda c: c, [((1, 32, 64, 64), "fast style transfer InstanceNorm 32x64x64"),
                                                 ((1, 128, 16, 16), "style transfer residual InstanceNorm 128x16x16")]),
            ("group_norm_g8_nchw", lambda c: 8, [((1, 64, 32, 32), "FCOS/NanoDet-style GroupNorm head (8 groups)"),
                                                 ((1, 128, 16, 16), "GroupNorm 8 groups at 16x16x128")])):
        for s, src in shapes:
            g = groups_of(s[1])
            ts.append(_t(pattern, s[1:], (inp("X", s), inp("gamma", (s[1],)), inp("beta", (s[1],)), out("Y", s)),
                         partial(groupnorm_def, s, g), partial(groupnorm_ref, groups=g), 7 * numel(s), src, "NCHW",
                         make_inputs=partial(_gn_inputs, s)))
    return ts
