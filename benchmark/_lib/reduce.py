"""Reduction TE blocks over the last axis of 2-D/3-D tensors: sum/mean/max, softmax, logsumexp,
variance; plus a TVMScript template for first-order recurrences (TE has no scan for PrimFuncs) and the
task built from it.
"""

from __future__ import annotations

import numpy as np


def _last(X):
    return int(X.shape[-1])


def row_reduce(X, kind: str, *, name: str, acc: str = "float32", where=None):
    """Reduce the last axis: kind in sum|mean|max|min|sumsq. Output drops that axis (fp32 accumulate)."""
    from tvm import te

    n = _last(X)
    k = te.reduce_axis((0, n), name="r_" + name)
    lead = tuple(X.shape[:-1])

    def val(idx):
        v = X[idx + (k,)]
        return v if v.dtype == acc else v.astype(acc)

    if kind in ("sum", "mean", "sumsq"):

        def f(*idx):
            v = val(idx)
            return te.sum(v * v if kind == "sumsq" else v, axis=k, where=where(*idx, k) if where else None)

        S = te.compute(lead, f, name=name + ("_sum" if kind == "mean" else ""))
        if kind != "mean":
            return S
        return te.compute(lead, lambda *idx: S[idx] * (1.0 / n), name=name)
    red = te.max if kind == "max" else te.min
    return te.compute(lead, lambda *idx: red(val(idx), axis=k, where=where(*idx, k) if where else None), name=name)


def softmax_lastdim(X, *, name: str = "Y", scale: float = 1.0, mask=None, out_dtype: str | None = None):
    """softmax(scale*X + mask) over the last axis; `mask(*idx) -> additive bias expr` (causal, padding).

    fp16 inputs are computed in fp32 and cast back (the usual edge practice for softmax).
    """
    from tvm import te

    out_dtype = out_dtype or X.dtype

    def z(idx):
        v = X[idx].astype("float32") if X.dtype != "float32" else X[idx]
        v = v * scale if scale != 1.0 else v
        return v + mask(*idx) if mask is not None else v

    Z = te.compute(tuple(X.shape), lambda *idx: z(idx), name=name + "_z")
    M = row_reduce(Z, "max", name=name + "_max")
    E = te.compute(tuple(X.shape), lambda *idx: te.exp(Z[idx] - M[idx[:-1]]), name=name + "_exp")
    S = row_reduce(E, "sum", name=name + "_den")
    return te.compute(tuple(X.shape), lambda *idx: (E[idx] / S[idx[:-1]]).astype(out_dtype), name=name)


def logsumexp_lastdim(X, *, name: str = "Y"):
    from tvm import te

    M = row_reduce(X, "max", name=name + "_max")
    E = te.compute(tuple(X.shape), lambda *idx: te.exp(X[idx] - M[idx[:-1]]), name=name + "_exp")
    S = row_reduce(E, "sum", name=name + "_den")
    return te.compute(tuple(X.shape[:-1]), lambda *idx: M[idx] + te.log(S[idx]), name=name)


def softmax_np(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def logsumexp_np(x: np.ndarray, axis: int = -1) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def scan_script(*, shape: tuple[int, int], params: str, body: str, allocs: str = "") -> str:
    """TVMScript for a recurrence along the last axis of a [C, N] grid: `body` is the sblock body
    (indices vc, vt; `vt` is an ordered scan axis so the step may read [vc, vt - 1])."""
    c, n = shape
    ind = " " * 12
    body_txt = "\n".join(ind + line for line in body.strip().splitlines())
    alloc_txt = "\n".join("    " + line for line in allocs.strip().splitlines()) if allocs.strip() else ""
    return (
        f"@T.prim_func(s_tir=True)\ndef main({params}):\n{alloc_txt}\n"
        f"    for c, t in T.grid({c}, {n}):\n"
        f'        with T.sblock("step"):\n'
        f"            vc = T.axis.spatial({c}, c)\n"
        f"            vt = T.axis.scan({n}, t)\n{body_txt}\n"
    )


def scan_task(pattern: str, c: int, n: int, body: str, ref, flops: int, desc: str, *, domain: str,
              allocs: str = "", dist: str | None = None, tag: str = ""):
    """An L1 task over a float32 [C, N] recurrence X -> Y written with scan_script (id tag "CxN" + tag)."""
    from .linalg import In, Out, make_task

    script = scan_script(
        shape=(c, n),
        params=f'X: T.Buffer(({c}, {n}), "float32"), Y: T.Buffer(({c}, {n}), "float32")',
        body=body,
        allocs=allocs,
    )
    return make_task(pattern=pattern, tag=f"{c}x{n}{tag}", level=1, domain=domain, layout="[C,N]",
                     ins=[In("X", (c, n), dist=dist)], outs=[Out("Y", (c, n))], te_fn=None, script=script,
                     ref=ref, flops=flops, desc=desc)
