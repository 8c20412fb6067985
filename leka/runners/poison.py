"""What happens between timed runs: a kernel must never find a previous run's answer while it is timed, or
one that checks for it and skips the work would be timed doing nothing.

Before every timed run (untimed):
- the output buffers are refilled with poison (floats NaN, integers and bools a fixed garbage value), so
  a previous answer is not in the outputs;
- every input is rolled by one row along its first axis longer than one (``np.roll(x, -1, axis)``), so
  consecutive runs never see the same inputs and an answer cached elsewhere (a scratch buffer the
  allocator hands back) is stale. Rows move whole: what each row holds stays a valid input.

For TVM devices this is a global function that TVM's ``time_evaluator`` calls as ``f_preproc`` before
each timed repeat: on CPU a compiled TIR function of ours (no Python between runs), on other devices a
Python callback that copies arrays in.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Sequence

import numpy as np

_REGISTERED: dict[str, Any] = {}  # keeps each registered function (and its module) alive
Params = list[tuple[str, tuple[int, ...], str]]


def value(dtype: str) -> Any:
    """The poison value of a dtype."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.nan
    if dt.kind == "b":
        return True
    info = np.iinfo(dt)
    return info.min + 0x5A if dt.kind == "i" else info.max - 0x5A


def array(shape: Sequence[int], dtype: str) -> np.ndarray:
    return np.full(tuple(shape), value(dtype), dtype=np.dtype(dtype))


def roll_axis(shape: Sequence[int]) -> int | None:
    """The axis inputs are rolled along: the first longer than one (None: a single element)."""
    return next((k for k, n in enumerate(shape) if n > 1), None)


def rolled(a: np.ndarray, steps: int = 1) -> np.ndarray:
    """`a` as the preproc leaves it after `steps` timed runs (negative: before)."""
    k = roll_axis(a.shape)
    return a.copy() if k is None else np.ascontiguousarray(np.roll(a, -steps, axis=k))


def _literal(dtype: str) -> str:
    v = value(dtype)
    return f'T.{dtype}("nan")' if isinstance(v, float) and math.isnan(v) else f"T.{dtype}({v!r})"


def _script(params: Params, outputs: Sequence[int]) -> str:
    """TVMScript of the CPU preproc: roll every input by one row, fill every output with poison."""
    sig = ", ".join(f"p{i}: T.Buffer({tuple(shape)!r}, {dtype!r})" for i, (_n, shape, dtype) in enumerate(params))
    body = ['    T.func_attr({"global_symbol": "preproc", "tirx.noalias": True})']
    for i, (_n, shape, dtype) in enumerate(params):
        total = math.prod(shape)
        if total == 0:
            continue
        body.append(f"    f{i} = T.decl_buffer(({total},), {dtype!r}, data=p{i}.data)")
        if i in outputs:
            body.append(f"    for e in range({total}):\n        f{i}[e] = {_literal(dtype)}")
            continue
        k = roll_axis(shape)
        if k is None:
            continue
        row = math.prod(shape[k + 1:])
        body += [f"    t{i} = T.decl_buffer(({row},), {dtype!r})",
                 f"    for e in range({row}):\n        t{i}[e] = f{i}[e]",
                 f"    for e in range({total - row}):\n        f{i}[e] = f{i}[e + {row}]",
                 f"    for e in range({row}):\n        f{i}[{total - row} + e] = t{i}[e]"]
    return "@T.prim_func\ndef preproc(" + sig + "):\n" + "\n".join(body) + "\n"


def _compiled(params: Params, outputs: Sequence[int]):
    import tvm

    func = tvm.script.from_source(_script(params, outputs))  # our own text, not a candidate's
    return tvm.compile(tvm.IRModule({"preproc": func}), target="llvm")["preproc"]


def _copying(params: Params, outputs: Sequence[int]):
    fills = {i: array(params[i][1], params[i][2]) for i in outputs}

    def preproc(*tensors) -> None:
        for i, t in enumerate(tensors[:len(params)]):
            t.copyfrom(fills[i] if i in fills else rolled(t.numpy()))

    return preproc


def preproc(params: Params, outputs: Sequence[int], dev) -> str:
    """Name of a registered global function doing the above on a kernel's arguments (the params at positions
    `outputs` are its outputs), for ``time_evaluator(..., f_preproc=name)``; made once, then cached."""
    import tvm

    params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
    outputs = sorted(int(i) for i in outputs)
    cpu = dev.dlpack_device_type() == tvm.cpu().dlpack_device_type()
    name = "leka.preproc." + hashlib.sha1(repr((params, outputs, cpu)).encode()).hexdigest()[:16]
    if name not in _REGISTERED:
        func = _compiled(params, outputs) if cpu else _copying(params, outputs)
        tvm.register_global_func(name, func, override=True)
        _REGISTERED[name] = func
    return name
