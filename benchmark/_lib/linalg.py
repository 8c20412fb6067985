"""Linear-algebra TE blocks (GEMM, GEMV, batched matmul, int8 requantisation) and the small
task-assembly helper the sequence-domain modules (speech/signal/nlp/robotics/anomaly) share.

Every block takes TE tensors and returns TE tensors; NumPy references live next to their use.
fp16 blocks read float16, accumulate in float32 (as edge fp16 GEMMs do) and cast the result back.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from leka.tasks.task import ArgSpec, Task, generate

from . import make_task as assemble_task

MCU_SCRATCH = 32 * 1024  # scratch SRAM bytes left to one kernel on a Cortex-M7-class part (naive defs fit)
DTYPE_SUFFIX = {"float32": "", "float16": "f16", "int8": "i8", "int16": "i16", "uint8": "u8", "int32": "i32"}


def In(
    name: str,
    shape: Sequence[int],
    dtype: str = "float32",
    *,
    low: float | None = None,
    high: float | None = None,
    dist: str | None = None,
    fixed: Callable[[], np.ndarray] | None = None,
) -> ArgSpec | tuple[ArgSpec, Callable[[], np.ndarray]]:
    """An input arg. `fixed` marks a constant table (DFT basis, mel filterbank) drawn the same every trial."""
    spec = ArgSpec(name, tuple(int(s) for s in shape), dtype, "input", low, high, dist)
    return (spec, fixed) if fixed is not None else spec


def Out(name: str, shape: Sequence[int], dtype: str = "float32") -> ArgSpec:
    return ArgSpec(name, tuple(int(s) for s in shape), dtype, "output")


def make_task(
    *,
    pattern: str,
    tag: str,
    level: int,
    domain: str,
    ins: Sequence[Any],
    outs: Sequence[ArgSpec],
    te_fn: Callable[..., Any] | None,
    ref: Callable[..., Any],
    flops: int,
    desc: str,
    dtype: str | None = None,
    layout: str = "",
    rtol: float | None = None,
    atol: float | None = None,
    scratch_budget: int | None = None,
    tags: tuple[str, ...] = (),
    script: str | None = None,
    make_inputs: Callable[[np.random.Generator, str], list[np.ndarray]] | None = None,
) -> Task:
    """Assemble a Task; the TE definition is built lazily from placeholders named after the args.

    Pattern and id carry the main dtype (`gemv_f16`, `l1-gemv-512x512-f16`) so dtype variants are
    distinct patterns. fp16 references run on float32 copies of the inputs (run_reference casts back).
    Recurrences (IIR, scans) that TE cannot express pass `script`: TVMScript text of the PrimFunc.
    `make_inputs` overrides input drawing (well-conditioned matrices, points in a map's range).
    `scratch_budget` marks MCU-class workloads: memory_budget_bytes = argument bytes + that scratch, so a
    schedule may not stage large intermediates (the naive definition fits).
    """
    specs = [x[0] if isinstance(x, tuple) else x for x in ins]
    tables = {i: x[1] for i, x in enumerate(ins) if isinstance(x, tuple)}
    main = dtype or outs[0].dtype
    sfx = DTYPE_SUFFIX[main]
    full_pattern = f"{pattern}_{sfx}" if sfx else pattern
    task_id = f"l{level}-{pattern}-{tag}" + (f"-{sfx}" if sfx else "")

    def build():
        from tvm import te

        if script is not None:
            import tvm

            return tvm.script.from_source(script)

        phs = [te.placeholder(s.shape, s.dtype, name=s.name) for s in specs]
        res = te_fn(*phs)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        return te.create_prim_func(phs + res)

    def reference(*arrays):
        arrays = [a.astype(np.float32) if a.dtype == np.float16 else a for a in arrays]
        return ref(*arrays)

    if tables:
        if make_inputs is not None:
            raise ValueError(f"{task_id}: fixed tables and a custom make_inputs do not combine")

        def make_inputs(rng: np.random.Generator, dist: str) -> list[np.ndarray]:
            return [tables[i]().astype(s.dtype) if i in tables else generate(s, rng, dist) for i, s in enumerate(specs)]

    args_bytes = sum(s.nbytes for s in specs) + sum(o.nbytes for o in outs)
    budget = args_bytes + scratch_budget if scratch_budget is not None else None
    task = assemble_task(level=level, pattern=full_pattern, tag=tag, domain=domain, args=tuple(specs) + tuple(outs),
                         build=build, reference=reference, flops=flops, description=desc, dtype=main,
                         layout=layout, rtol=rtol, atol=atol, memory_budget_bytes=budget, make_inputs=make_inputs,
                         tags=tags)
    assert task.id == task_id, (task.id, task_id)  # one id scheme for the whole suite
    return task


# ---------------------------------------------------------------- TE blocks


def acc_read(x, dtype: str = "float32"):
    """Read an element for accumulation: widen fp16 to fp32, int8 to int32."""
    return x if x.dtype == dtype else x.astype(dtype)


def matmul(
    A,
    B,
    *,
    trans_a: bool = False,
    trans_b: bool = False,
    bias=None,
    out_dtype: str | None = None,
    acc: str = "float32",
    name: str = "Y",
):
    """Y = op(A) @ op(B) (+ bias[n]) for 2-D A, B; accumulates in `acc`, casts to out_dtype."""
    from tvm import te

    m = A.shape[1] if trans_a else A.shape[0]
    kk = A.shape[0] if trans_a else A.shape[1]
    n = B.shape[0] if trans_b else B.shape[1]
    out_dtype = out_dtype or A.dtype
    r = te.reduce_axis((0, kk), name="k")

    def a(i, k):
        return A[k, i] if trans_a else A[i, k]

    def b(k, j):
        return B[j, k] if trans_b else B[k, j]

    S = te.compute(
        (m, n),
        lambda i, j: te.sum(acc_read(a(i, r), acc) * acc_read(b(r, j), acc), axis=r),
        name=name + "_acc" if (bias is not None or out_dtype != acc) else name,
    )
    if bias is None and out_dtype == acc:
        return S
    return te.compute(
        (m, n),
        lambda i, j: (S[i, j] + (acc_read(bias[j], acc) if bias is not None else 0)).astype(out_dtype),
        name=name,
    )


def batch_matmul(A, B, *, trans_b: bool = False, acc: str = "float32", scale: float | None = None, name: str = "Y"):
    """Y[b] = A[b] @ op(B[b]) (* scale), batched over the leading axis; fp16 accumulates in fp32."""
    from tvm import te

    bsz, m, kk = A.shape
    n = B.shape[1] if trans_b else B.shape[2]
    r = te.reduce_axis((0, kk), name="k")

    def b(h, k, j):
        return B[h, j, k] if trans_b else B[h, k, j]

    body = lambda h, i, j: te.sum(acc_read(A[h, i, r], acc) * acc_read(b(h, r, j), acc), axis=r)
    if scale is None and A.dtype == acc:
        return te.compute((bsz, m, n), body, name=name)
    S = te.compute((bsz, m, n), body, name=name + "_acc")
    return te.compute(
        (bsz, m, n), lambda h, i, j: (S[h, i, j] * (scale if scale is not None else 1.0)).astype(A.dtype), name=name
    )


# ---------------------------------------------------------------- int8 requantisation (TFLite style)


def quant_multiplier(real_scale: float) -> tuple[int, int]:
    """real_scale ~= mult * 2**-shift with mult in [2**30, 2**31): TFLite's int32 fixed-point multiplier."""
    exp = math.floor(math.log2(real_scale))
    shift = 30 - exp
    mult = int(round(real_scale * (1 << shift)))
    return mult, shift


def int8_gemm_scale(k: int, target_std: float = 40.0) -> tuple[int, int]:
    """Multiplier/shift taking an int8·int8 sum over k terms (std ~ 73²·sqrt(k)) to an int8 spread."""
    return quant_multiplier(target_std / (73.0 * 73.0 * math.sqrt(k)))


def requant_te(acc, mult: int, shift: int, zp: int = 0, lo: int = -128, hi: int = 127):
    """round-half-up((acc * mult) >> shift) + zp, clamped, as int8 (int64 intermediate, exact)."""
    from tvm import te, tirx

    v = ((acc.astype("int64") * mult + (1 << (shift - 1))) >> shift) + zp
    return te.max(te.min(v, tirx.const(hi, "int64")), tirx.const(lo, "int64")).astype("int8")


def requant_np(acc: np.ndarray, mult: int, shift: int, zp: int = 0, lo: int = -128, hi: int = 127) -> np.ndarray:
    v = ((acc.astype(np.int64) * mult + (1 << (shift - 1))) >> shift) + zp
    return np.clip(v, lo, hi).astype(np.int8)


def matmul_i8(A, B, bias, mult: int, shift: int, *, trans_b: bool = True, relu: bool = False, name: str = "Y"):
    """int8 FC: int32 accumulation of A·Bᵀ + int32 bias, requantised to int8 (ReLU = clamp at zp 0)."""
    from tvm import te

    m, kk = A.shape
    n = B.shape[0] if trans_b else B.shape[1]
    r = te.reduce_axis((0, kk), name="k")
    b = (lambda k, j: B[j, k]) if trans_b else (lambda k, j: B[k, j])
    S = te.compute(
        (m, n), lambda i, j: te.sum(A[i, r].astype("int32") * b(r, j).astype("int32"), axis=r), name=name + "_acc"
    )
    return te.compute(
        (m, n), lambda i, j: requant_te(S[i, j] + bias[j], mult, shift, lo=0 if relu else -128), name=name
    )


def matmul_i8_np(
    a: np.ndarray, b: np.ndarray, bias: np.ndarray, mult: int, shift: int, *, trans_b: bool = True, relu: bool = False
) -> np.ndarray:
    acc = a.astype(np.int32) @ (b.astype(np.int32).T if trans_b else b.astype(np.int32))
    return requant_np(acc + bias, mult, shift, lo=0 if relu else -128)


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k
