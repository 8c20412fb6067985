"""L1 detection post-processing that is dense (no sort / NMS loop): SSD box decoding, YOLOv5 head
decoding and pairwise IoU (the matrix NMS and anchor matching consume)."""
from __future__ import annotations

from functools import partial

import numpy as np

from benchmark._lib import inp, make_task, out, shape_tag
from leka.tasks.task import Task, generate

SSD_SCALES = (10.0, 10.0, 5.0, 5.0)  # TF Object Detection API faster_rcnn_box_coder (y, x, h, w)
LOG_CLIP = 4.135166556742356  # log(1000/16): torchvision's clamp of dh/dw before exp (no overflow on wild logits)


def _f(v):
    from tvm import tirx

    return tirx.const(v, "float32")


def box_decode_def(n):
    """deltas (N,4: ty,tx,th,tw) + anchors (N,4: cy,cx,h,w) -> boxes (N,4: ymin,xmin,ymax,xmax)."""
    from tvm import te

    D = te.placeholder((n, 4), "float32", name="deltas")
    A = te.placeholder((n, 4), "float32", name="anchors")
    sy, sx, sh, sw = SSD_SCALES

    def f(i, k):
        cy = D[i, 0] / _f(sy) * A[i, 2] + A[i, 0]
        cx = D[i, 1] / _f(sx) * A[i, 3] + A[i, 1]
        h = te.exp(te.min(D[i, 2] / _f(sh), _f(LOG_CLIP))) * A[i, 2]
        w = te.exp(te.min(D[i, 3] / _f(sw), _f(LOG_CLIP))) * A[i, 3]
        c = te.if_then_else(k % 2 == 0, cy, cx)
        half = te.if_then_else(k % 2 == 0, h, w) * _f(0.5)
        return te.if_then_else(k < 2, c - half, c + half)
    return te.create_prim_func([D, A, te.compute((n, 4), f, name="boxes")])


def box_decode_ref(d, a):
    sy, sx, sh, sw = SSD_SCALES
    d, a = d.astype(np.float64), a.astype(np.float64)
    cy, cx = d[:, 0] / sy * a[:, 2] + a[:, 0], d[:, 1] / sx * a[:, 3] + a[:, 1]
    h = np.exp(np.minimum(d[:, 2] / sh, LOG_CLIP)) * a[:, 2]
    w = np.exp(np.minimum(d[:, 3] / sw, LOG_CLIP)) * a[:, 3]
    return np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], axis=1)


def _anchor_inputs(n, rng, dist):
    anchors = np.stack([rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(0.05, 0.9, n),
                        rng.uniform(0.05, 0.9, n)], 1).astype("float32")
    return [generate(inp("deltas", (n, 4)), rng, dist), anchors]


YOLO_ANCHORS = {20: [(116, 90), (156, 198), (373, 326)], 40: [(30, 61), (62, 45), (59, 119)]}  # YOLOv5 P5/P4


def yolo_decode_def(g, stride, nc):
    """YOLOv5 head: xy = (2*sig(t) - 0.5 + grid) * stride, wh = (2*sig(t))^2 * anchor, rest sigmoid."""
    from tvm import te

    ch = 5 + nc
    X = te.placeholder((1, 3, g, g, ch), "float32", name="X")
    anchors = YOLO_ANCHORS[g]

    def f(b, a, y, x, k):
        s = te.sigmoid(X[b, a, y, x, k])
        aw = te.if_then_else(a == 0, _f(anchors[0][0]), te.if_then_else(a == 1, _f(anchors[1][0]), _f(anchors[2][0])))
        ah = te.if_then_else(a == 0, _f(anchors[0][1]), te.if_then_else(a == 1, _f(anchors[1][1]), _f(anchors[2][1])))
        grid = te.if_then_else(k == 0, x, y).astype("float32")
        xy = (s * _f(2.0) - _f(0.5) + grid) * _f(float(stride))
        wh = (s * _f(2.0)) * (s * _f(2.0)) * te.if_then_else(k == 2, aw, ah)
        return te.if_then_else(k < 2, xy, te.if_then_else(k < 4, wh, s))
    return te.create_prim_func([X, te.compute((1, 3, g, g, ch), f, name="Y")])


def yolo_decode_ref(x, stride):
    g = x.shape[2]
    s = 0.5 * (1 + np.tanh(0.5 * x.astype(np.float64)))
    gy, gx = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    anc = np.array(YOLO_ANCHORS[g], dtype=np.float64).reshape(1, 3, 1, 1, 2)
    y = s.copy()
    y[..., 0] = (s[..., 0] * 2 - 0.5 + gx) * stride
    y[..., 1] = (s[..., 1] * 2 - 0.5 + gy) * stride
    y[..., 2:4] = (s[..., 2:4] * 2) ** 2 * anc
    return y


def iou_def(n, m):
    from tvm import te

    A = te.placeholder((n, 4), "float32", name="A")
    B = te.placeholder((m, 4), "float32", name="B")

    def f(i, j):
        ih = te.max(te.min(A[i, 2], B[j, 2]) - te.max(A[i, 0], B[j, 0]), _f(0.0))
        iw = te.max(te.min(A[i, 3], B[j, 3]) - te.max(A[i, 1], B[j, 1]), _f(0.0))
        inter = ih * iw
        area_a = (A[i, 2] - A[i, 0]) * (A[i, 3] - A[i, 1])
        area_b = (B[j, 2] - B[j, 0]) * (B[j, 3] - B[j, 1])
        return inter / (area_a + area_b - inter)
    return te.create_prim_func([A, B, te.compute((n, m), f, name="iou")])


def iou_ref(a, b):
    a, b = a.astype(np.float64)[:, None], b.astype(np.float64)[None]
    ih = np.maximum(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0)
    iw = np.maximum(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0)
    inter = ih * iw
    area = lambda t: (t[..., 2] - t[..., 0]) * (t[..., 3] - t[..., 1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def _boxes(rng, k):
    c = rng.uniform(0, 1, (k, 2))
    hw = rng.uniform(0.05, 0.5, (k, 2))
    return np.concatenate([c - hw / 2, c + hw / 2], 1).astype("float32")


def tasks() -> list[Task]:
    ts: list[Task] = []
    for n, src in ((2034, "SSD-MobileDet-EdgeTPU 320 (2034 anchors)"), (1917, "SSD-MobileNetV2 300 (1917 anchors)")):
        ts.append(make_task(level=1, pattern="ssd_box_decode", tag=str(n), domain="vision",
                            args=(inp("deltas", (n, 4)), inp("anchors", (n, 4)), out("boxes", (n, 4))),
                            build=partial(box_decode_def, n), reference=box_decode_ref, flops=20 * n,
                            make_inputs=partial(_anchor_inputs, n),
                            description=f"SSD center-size box decode, scales 10/10/5/5, dh/dw clamped at log(1000/16): {src}"))
    for g, stride, src in ((20, 32, "YOLOv5 P5 head at 640 (20x20 grid)"), (40, 16, "YOLOv5 P4 head at 640 (40x40)")):
        shape = (1, 3, g, g, 85)
        ts.append(make_task(level=1, pattern="yolov5_head_decode", tag=shape_tag(3, g, g, 85), domain="vision",
                            args=(inp("X", shape), out("Y", shape)), build=partial(yolo_decode_def, g, stride, 80),
                            reference=partial(yolo_decode_ref, stride=stride), flops=8 * int(np.prod(shape)),
                            description=f"sigmoid + grid/anchor box decode: {src}"))
    for n, m, src in ((100, 2034, "100 ground-truth/detections vs SSD-MobileDet anchors"),
                      (300, 300, "pre-NMS top-300 self-IoU matrix")):
        ts.append(make_task(level=1, pattern="box_iou_pairwise", tag=shape_tag(n, m), domain="vision",
                            args=(inp("A", (n, 4)), inp("B", (m, 4)), out("iou", (n, m))),
                            build=partial(iou_def, n, m), reference=iou_ref, flops=17 * n * m,
                            make_inputs=lambda rng, dist, n=n, m=m: [_boxes(rng, n), _boxes(rng, m)],
                            description=f"pairwise IoU of corner boxes: {src}"))
    return ts
