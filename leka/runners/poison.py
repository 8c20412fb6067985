"""What happens between timed runs: a kernel must never be able to reuse a previous run's answer while it is
timed — neither one left in its output buffer nor one it kept in scratch memory the allocator hands back.

Once timing is armed (``Preproc``), before every timed run and untimed:
- the output buffers are refilled with poison (floats NaN, integers and bools a fixed garbage value);
- every input is rewritten as a fresh random mix, chunk by chunk (16 elements or fewer), of the uploaded
  inputs and of those inputs rolled by one row along their first axis longer than one (``alternate``):
  no two runs see the same inputs, and no run's inputs follow from an earlier run's by a fixed transform.
  Each element keeps a value valid for its position's column (rows move whole in the roll).
- the final, checked run instead restores the uploaded inputs exactly; it comes after runs on other inputs,
  so a kernel that recognises familiar inputs meets them there for the first time.

On CPU the preproc is a TIR function of ours compiled once per signature and passed to TVM's
``time_evaluator`` as ``f_preproc``; the timed function is a one-line compiled wrapper that calls the kernel
(``T.call_packed``, ~10 ns), because the preproc receives the timed function's arguments and needs the
uploaded and alternate inputs and its random state besides the kernel's. On other devices the preproc is a
Python callback (NumPy + copies) and the kernel itself is timed.
"""
from __future__ import annotations

import hashlib
import itertools
import math
from typing import Any, Sequence

import numpy as np

Params = list[tuple[str, tuple[int, ...], str]]
_REGISTERED: dict[str, Any] = {}  # keeps registered functions (and their modules) alive
_KERNEL_IDS = itertools.count()


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


def alternate(a: np.ndarray) -> np.ndarray:
    """`a` rolled by one row along its first axis longer than one (a copy of `a` when it has one element)."""
    k = next((k for k, n in enumerate(a.shape) if n > 1), None)
    return a.copy() if k is None else np.ascontiguousarray(np.roll(a, -1, axis=k))


def _chunk(total: int) -> int:
    return math.gcd(total, 16) or 1


def _literal(dtype: str) -> str:
    v = value(dtype)
    return f'T.{dtype}("nan")' if isinstance(v, float) and math.isnan(v) else f"T.{dtype}({v!r})"


def _signature(params: Params, inputs: Sequence[int]) -> str:
    """Kernel params, then each input's uploaded and alternate copy, then the state (rng, mode)."""
    args = [f"p{i}: T.Buffer({tuple(s)!r}, {d!r})" for i, (_n, s, d) in enumerate(params)]
    for i in inputs:
        _n, s, d = params[i]
        args += [f"o{i}: T.Buffer({tuple(s)!r}, {d!r})", f"a{i}: T.Buffer({tuple(s)!r}, {d!r})"]
    return ", ".join(args + ['st: T.Buffer((2,), "uint32")'])


def _mix_script(params: Params, outputs: Sequence[int]) -> str:
    inputs = [i for i in range(len(params)) if i not in outputs]
    body = ['    T.func_attr({"global_symbol": "mix", "tirx.noalias": True})']
    for i, (_n, shape, dtype) in enumerate(params):
        total = math.prod(shape)
        if total == 0:
            continue
        body.append(f"    f{i} = T.decl_buffer(({total},), {dtype!r}, data=p{i}.data)")
        if i in outputs:
            body.append(f"    for e in range({total}):\n        f{i}[e] = {_literal(dtype)}")
            continue
        ch = _chunk(total)
        body += [f"    g{i} = T.decl_buffer(({total},), {dtype!r}, data=o{i}.data)",
                 f"    h{i} = T.decl_buffer(({total},), {dtype!r}, data=a{i}.data)",
                 f"    for c in range({total // ch}):",
                 "        st[0] = st[0] ^ (st[0] << T.uint32(13))",
                 "        st[0] = st[0] ^ (st[0] >> T.uint32(17))",
                 "        st[0] = st[0] ^ (st[0] << T.uint32(5))",
                 "        if st[1] == T.uint32(1) or (st[0] & T.uint32(1)) == T.uint32(0):",
                 f"            for e in range({ch}):\n                f{i}[c * {ch} + e] = g{i}[c * {ch} + e]",
                 "        else:",
                 f"            for e in range({ch}):\n                f{i}[c * {ch} + e] = h{i}[c * {ch} + e]"]
    return ("@T.prim_func\ndef mix(" + _signature(params, inputs) + "):\n" + "\n".join(body) + "\n")


def _call_script(params: Params, outputs: Sequence[int], kernel: str) -> str:
    inputs = [i for i in range(len(params)) if i not in outputs]
    args = ", ".join(f"p{i}" for i in range(len(params)))
    return (f"@T.prim_func\ndef call({_signature(params, inputs)}):\n"
            f'    T.func_attr({{"global_symbol": "call"}})\n    T.evaluate(T.call_packed("{kernel}", {args}))\n')


def _compile(script: str, name: str):
    import tvm

    func = tvm.script.from_source(script)  # our own text, not a candidate's
    return tvm.compile(tvm.IRModule({name: func}), target="llvm").mod


class Preproc:
    """Timing of one loaded kernel with the preproc above. ``timer(n)`` → (time_evaluator, its arguments)."""

    def __init__(self, module, entry: str, tensors: list, params: Params, outputs: Sequence[int], dev,
                 seed: int = 0x9E3779B9):
        import tvm

        self.module, self.entry = module, entry
        self.kernel = kernel = module[entry]
        self.params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
        self.outputs = sorted(int(i) for i in outputs)
        self.inputs = [i for i in range(len(params)) if i not in self.outputs]
        self.dev, self.tensors = dev, tensors
        uploaded = [tensors[i].numpy() for i in self.inputs]
        alt = [alternate(a) for a in uploaded]
        for i, a in zip(self.inputs, alt):  # untimed runs (warm-up, calibration) see the alternate inputs
            tensors[i].copyfrom(a)
        self.cpu = dev.dlpack_device_type() == tvm.cpu().dlpack_device_type()
        if self.cpu:
            extra = [tvm.runtime.tensor(x, dev) for pair in zip(uploaded, alt) for x in pair]
            self.state = tvm.runtime.tensor(np.array([seed | 1, 0], np.uint32), dev)
            self.args = list(tensors) + extra + [self.state]
            self.mix_name = self._register_mix()
            self.kernel_name = f"leka.timed_kernel.{next(_KERNEL_IDS)}"
            tvm.register_global_func(self.kernel_name, kernel, override=True)
            self.call = _compile(_call_script(self.params, self.outputs, self.kernel_name), "call")
        else:
            self._host = (uploaded, alt, np.random.default_rng(seed), [array(*self.params[i][1:]) for i in self.outputs])
            self._restore = False
            self.mix_name = f"leka.mix.callback.{next(_KERNEL_IDS)}"
            tvm.register_global_func(self.mix_name, self._callback, override=True)
            _REGISTERED[self.mix_name] = self._callback

    def _register_mix(self) -> str:
        import tvm

        key = repr((self.params, self.outputs)).encode()
        name = "leka.mix." + hashlib.sha1(key).hexdigest()[:16]
        if name not in _REGISTERED:
            mod = _compile(_mix_script(self.params, self.outputs), "mix")
            tvm.register_global_func(name, mod["mix"], override=True)
            _REGISTERED[name] = (mod, mod["mix"])
        return name

    def _callback(self, *tensors) -> None:
        uploaded, alt, rng, fills = self._host
        for i, o, a in zip(self.inputs, uploaded, alt):
            pick = rng.integers(0, 2, size=o.shape, dtype=bool)
            tensors[i].copyfrom(o if self._restore else np.where(pick, a, o))
        for i, fill in zip(self.outputs, fills):
            tensors[i].copyfrom(fill)

    def timer(self, number: int, final: bool = False):
        """TVM's time_evaluator over `number` runs (one per repeat), the preproc before each; `final`: the
        preproc restores the uploaded inputs instead of mixing (the checked run)."""
        if self.cpu:
            state = self.state.numpy()
            state[1] = 1 if final else 0
            self.state.copyfrom(state)
            f = self.call.time_evaluator("call", self.dev, number=1, repeat=number, f_preproc=self.mix_name)
            return f, self.args
        self._restore = final
        return self.module.time_evaluator(self.entry, self.dev, number=1, repeat=number,
                                          f_preproc=self.mix_name), list(self.tensors)
