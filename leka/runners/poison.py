"""What happens between timed runs: a kernel must never be able to reuse a previous run's answer while it is
timed — neither one left in its output buffer nor one it kept in scratch memory the allocator hands back.

Once timing is armed (``Preproc``), before every timed run and untimed:
- the output buffers are refilled with poison (floats NaN, integers and bools a fixed garbage value);
- every input is rewritten as a fresh random element-wise mix of the uploaded inputs and of their
  *alternate*: the same rows shuffled along the longest axis by a permutation drawn at arming
  (``alternate``). The mix follows a random bit mask drawn at arming, read from a random offset each run.
  No two runs see the same inputs, no row repeats, and no run's inputs follow from an earlier run's by a
  transform the kernel can know. Rows move whole in the shuffle, so each element keeps a value valid for
  its column.
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
import os
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


def alternate(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`a` with its rows shuffled along its longest axis (a copy when it has one element). The shuffle is
    random per arming, so a kernel cannot know how a run's inputs relate to the uploaded ones."""
    if a.size <= 1:
        return a.copy()
    axis = int(np.argmax(a.shape))
    perm = rng.permutation(a.shape[axis])
    while a.shape[axis] > 1 and np.array_equal(perm, np.arange(a.shape[axis])):
        perm = rng.permutation(a.shape[axis])
    return np.ascontiguousarray(np.take(a, perm, axis=axis))


def mix(uploaded: np.ndarray, alt: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random element-wise mix of two arrays, as the compiled preproc makes it (for other devices)."""
    return np.where(rng.integers(0, 2, uploaded.shape, dtype=bool), alt, uploaded)


def _bits(dtype: str) -> str:
    """The unsigned integer type of a dtype's width (its mask's type)."""
    return f"uint{np.dtype(dtype).itemsize * 8}"


def _literal(dtype: str) -> str:
    v = value(dtype)
    return f'T.{dtype}("nan")' if isinstance(v, float) and math.isnan(v) else f"T.{dtype}({v!r})"


def _signature(params: Params, inputs: Sequence[int]) -> str:
    """Kernel params, then each input's uploaded copy, alternate and random mask, then the state (rng, mode)."""
    args = [f"p{i}: T.Buffer({tuple(s)!r}, {d!r})" for i, (_n, s, d) in enumerate(params)]
    for i in inputs:
        _n, s, d = params[i]
        args += [f"o{i}: T.Buffer({tuple(s)!r}, {d!r})", f"a{i}: T.Buffer({tuple(s)!r}, {d!r})",
                 f"m{i}: T.Buffer(({math.prod(s)},), {_bits(d)!r})"]
    return ", ".join(args + ['st: T.Buffer((2,), "uint32")'])


def _mix_script(params: Params, outputs: Sequence[int]) -> str:
    """Outputs poisoned; each input element from the uploaded copy or the alternate as the random mask,
    read from a random offset (a xorshift step per input and run), says; in final mode the uploaded copy."""
    inputs = [i for i in range(len(params)) if i not in outputs]
    body = ['    T.func_attr({"global_symbol": "mix", "tirx.noalias": True})']
    for i, (_n, shape, dtype) in enumerate(params):
        n = math.prod(shape)
        if n == 0:
            continue
        body.append(f"    f{i} = T.decl_buffer(({n},), {dtype!r}, data=p{i}.data)")
        if i in outputs:
            body.append(f"    for e in range({n}):\n        f{i}[e] = {_literal(dtype)}")
            continue
        u = _bits(dtype)  # blend as bits: g ^ ((g ^ h) & mask), mask all ones or zeros (vectorises)
        pick = (f"T.reinterpret({dtype!r}, T.reinterpret({u!r}, g{{i}}[{{k}}]) ^ ((T.reinterpret({u!r}, g{{i}}[{{k}}])"
                f" ^ T.reinterpret({u!r}, h{{i}}[{{k}}])) & m{{i}}[{{j}}]))")
        if dtype == "bool":
            pick = "T.if_then_else(m{i}[{j}] != T.uint8(0), h{i}[{k}], g{i}[{k}])"
        body += [f"    g{i} = T.decl_buffer(({n},), {dtype!r}, data=o{i}.data)",
                 f"    h{i} = T.decl_buffer(({n},), {dtype!r}, data=a{i}.data)",
                 "    st[0] = st[0] ^ (st[0] << T.uint32(13))",
                 "    st[0] = st[0] ^ (st[0] >> T.uint32(17))",
                 "    st[0] = st[0] ^ (st[0] << T.uint32(5))",
                 f"    off{i} = T.Cast(\"int32\", st[0] % T.uint32({n}))",
                 "    if st[1] == T.uint32(1):",
                 f"        for e in range({n}):\n            f{i}[e] = g{i}[e]",
                 "    else:",
                 f"        for e in range({n} - off{i}):",
                 "            f{i}[e] = ".format(i=i) + pick.format(i=i, j=f"e + off{i}", k="e"),
                 f"        for e in range(off{i}):",
                 f"            f{i}[{n} - off{i} + e] = " + pick.format(i=i, j="e", k=f"{n} - off{i} + e")]
    return "@T.prim_func\ndef mix(" + _signature(params, inputs) + "):\n" + "\n".join(body) + "\n"


def _call_script(params: Params, outputs: Sequence[int], kernel: str) -> str:
    inputs = [i for i in range(len(params)) if i not in outputs]
    args = ", ".join(f"p{i}" for i in range(len(params)))
    return (f"@T.prim_func\ndef call({_signature(params, inputs)}):\n"
            f'    T.func_attr({{"global_symbol": "call"}})\n    T.evaluate(T.call_packed("{kernel}", {args}))\n')


def _compile(script: str, name: str):
    import tvm

    func = tvm.script.from_source(script)  # our own text, not a candidate's
    return tvm.compile(tvm.IRModule({name: func}), target="llvm").mod


def registered_mix(params: Params, outputs: Sequence[int]) -> str:
    """Global name of the compiled CPU preproc for a signature (compiled on first use)."""
    import tvm

    params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
    outputs = sorted(int(i) for i in outputs)
    name = "leka.mix." + hashlib.sha1(repr((params, outputs)).encode()).hexdigest()[:16]
    if name not in _REGISTERED:
        mod = _compile(_mix_script(params, outputs), "mix")
        tvm.register_global_func(name, mod["mix"], override=True)
        _REGISTERED[name] = (mod, mod["mix"])
    return name


_LIBRARIES: dict[str, str | None] = {}  # signature -> exported wrapper library (None: cannot export here)


def _wrapper_library(params: Params, outputs: list[int], name: str) -> str | None:
    """A shared library of the wrapper calling global `name`, exported once per signature (needs a C
    compiler); each kernel then loads its own copy, whose cached lookup of `name` binds to that kernel."""
    if name not in _LIBRARIES:
        import tempfile

        path = os.path.join(tempfile.gettempdir(), f"{name}.so")
        try:
            import tvm

            func = tvm.script.from_source(_call_script(params, outputs, name))
            tvm.compile(tvm.IRModule({"call": func}), target="llvm").export_library(path)
            _LIBRARIES[name] = path
        except Exception:  # noqa: BLE001 - no compiler/linker here: compile a wrapper per kernel instead
            _LIBRARIES[name] = None
    return _LIBRARIES[name]


def compiled_call(kernel, params: Params, outputs: Sequence[int], reuse: "Preproc | tuple | None" = None):
    """(global name, wrapper module, kernel) timing `kernel`; the wrapper's call binds to the kernel on
    its first call (Preproc makes it right after registering the kernel under the name). `reuse` (an earlier
    Preproc or triple of this kernel) keeps its wrapper."""
    import shutil

    import tvm

    if isinstance(reuse, Preproc):
        reuse = (reuse.kernel_name, reuse.call, kernel) if reuse.cpu else None
    if reuse is not None:
        return reuse
    params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
    outputs = sorted(int(i) for i in outputs)
    name = "leka.timed." + hashlib.sha1(repr((params, outputs)).encode()).hexdigest()[:16]
    lib = _wrapper_library(params, outputs, name)
    if lib is not None:
        copy = f"{lib[:-3]}-{os.getpid()}-{next(_KERNEL_IDS)}.so"
        shutil.copyfile(lib, copy)
        try:
            return name, tvm.runtime.load_module(copy), kernel
        finally:
            os.unlink(copy)  # loaded: the file is no longer needed
    name = f"leka.timed_kernel.{next(_KERNEL_IDS)}"
    return name, _compile(_call_script(params, outputs, name), "call"), kernel


class Preproc:
    """Timing of one loaded kernel with the preproc above. ``timer(n)`` → (time_evaluator, its arguments)."""

    def __init__(self, module, entry: str, tensors: list, params: Params, outputs: Sequence[int], dev,
                 reuse: "Preproc | tuple | None" = None, callback: bool = False):
        import tvm

        self.module, self.entry = module, entry
        self.kernel = kernel = module[entry]
        self.params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
        self.outputs = sorted(int(i) for i in outputs)
        self.inputs = [i for i in range(len(params)) if i not in self.outputs]
        self.dev, self.tensors = dev, tensors
        seed = int.from_bytes(os.urandom(8), "little")  # neither the shuffle nor the mix is predictable
        rng = np.random.default_rng(seed)
        uploaded = [tensors[i].numpy() for i in self.inputs]
        alt = [alternate(a, rng) for a in uploaded]
        self.alt = alt
        for i, a in zip(self.inputs, alt):  # untimed runs (warm-up, calibration) see the alternate inputs
            tensors[i].copyfrom(a)
        # callback: the NumPy preproc on CPU too (Relax graphs: the VM's main takes only the inputs)
        self.cpu = not callback and dev.dlpack_device_type() == tvm.cpu().dlpack_device_type()
        if self.cpu:
            masks = [np.where(rng.integers(0, 2, a.size, dtype=bool), np.iinfo(_bits(a.dtype)).max, 0)
                     .astype(_bits(a.dtype)) for a in uploaded]
            extra = [tvm.runtime.tensor(x, dev) for trio in zip(uploaded, alt, masks) for x in trio]
            self.state = tvm.runtime.tensor(np.array([(seed & 0xFFFFFFFF) | 1, 0], np.uint32), dev)
            self.args = list(tensors) + extra + [self.state]
            self.mix_name = self._register_mix()
            self.kernel_name, self.call, _ = compiled_call(kernel, self.params, self.outputs, reuse)
            if not isinstance(reuse, Preproc):  # bind the wrapper to this kernel now (runs it once, untimed)
                tvm.register_global_func(self.kernel_name, kernel, override=True)
                _REGISTERED[self.kernel_name] = kernel
                self.call["call"](*self.args)
        else:
            fills = [array(*self.params[i][1:]) for i in self.outputs]
            self._host = (uploaded, alt, rng, fills)
            self._restore = False
            self.mix_name = f"leka.mix.callback.{next(_KERNEL_IDS)}"
            tvm.register_global_func(self.mix_name, self._callback, override=True)
            _REGISTERED[self.mix_name] = self._callback

    def _register_mix(self) -> str:
        return registered_mix(self.params, self.outputs)

    def _callback(self, *tensors) -> None:
        uploaded, alt, rng, fills = self._host
        for i, o, a in zip(self.inputs, uploaded, alt):
            tensors[i].copyfrom(o if self._restore else mix(o, a, rng))
        for i, fill in zip(self.outputs, fills):
            tensors[i].copyfrom(fill)

    def timer(self, number: int, final: bool = False):
        """TVM's time_evaluator over `number` runs (one per repeat), the preproc before each; `final`: the
        preproc restores the uploaded inputs instead of mixing (the checked run)."""
        if final:  # the run before the checked one (time_evaluator's untimed first call) sees the alternate
            for i, a in zip(self.inputs, self.alt):
                self.tensors[i].copyfrom(a)
        if self.cpu:
            state = self.state.numpy()
            state[1] = 1 if final else 0
            self.state.copyfrom(state)
            f = self.call.time_evaluator("call", self.dev, number=1, repeat=number, f_preproc=self.mix_name)
            return f, self.args
        self._restore = final
        return self.module.time_evaluator(self.entry, self.dev, number=1, repeat=number,
                                          f_preproc=self.mix_name), list(self.tensors)
