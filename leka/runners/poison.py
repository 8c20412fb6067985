"""Poison for output buffers between timed runs: a kernel must never find a previous run's answer in its
outputs while it is timed, or one that checks for it and skips the work would be timed doing nothing.

Floats get NaN, integers and bools a fixed garbage value. For TVM devices the refill is a registered
global function that TVM's ``time_evaluator`` calls as ``f_preproc`` before each timed repeat (its time
is not counted): on CPU a compiled TIR function (no Python on the path: ~1 µs for a small output), on
other devices a Python callback that copies poison arrays in.
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

_REGISTERED: dict[str, Any] = {}  # keeps each registered function (and its module) alive


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


def _constant(const):
    return lambda *_: const


def _compiled_fill(params: list[tuple[str, tuple[int, ...], str]], outputs: Sequence[int]):
    import tvm
    from tvm import te

    tensors = []
    for i, (_name, shape, dtype) in enumerate(params):
        if i in outputs:
            tensors.append(te.compute(shape, _constant(tvm.tirx.const(value(dtype), dtype)), name=f"poison{i}"))
        else:
            tensors.append(te.placeholder(shape, dtype, name=f"p{i}"))
    func = te.create_prim_func(tensors).with_attr("global_symbol", "poison")
    return tvm.compile(tvm.IRModule({"poison": func}), target="llvm")["poison"]


def _copy_fill(params: list[tuple[str, tuple[int, ...], str]], outputs: Sequence[int]):
    fills = {i: array(params[i][1], params[i][2]) for i in outputs}

    def refill(*tensors) -> None:
        for i, host in fills.items():
            tensors[i].copyfrom(host)

    return refill


def preproc(params: list[tuple[str, tuple[int, ...], str]], outputs: Sequence[int], dev) -> str:
    """Name of a global function refilling the params at positions `outputs` with poison, for
    ``time_evaluator(..., f_preproc=name)``; registered on first use, then cached."""
    import tvm

    params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
    outputs = sorted(int(i) for i in outputs)
    cpu = dev.dlpack_device_type() == tvm.cpu().dlpack_device_type()
    key = repr((params, outputs, cpu)).encode()
    name = "leka.poison." + hashlib.sha1(key).hexdigest()[:16]
    if name not in _REGISTERED:
        func = _compiled_fill(params, outputs) if cpu else _copy_fill(params, outputs)
        tvm.register_global_func(name, func, override=True)
        _REGISTERED[name] = func
    return name
