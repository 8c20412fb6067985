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
- timed runs themselves are checked: after each timed run (in the next run's preproc, or after the last run of
  a round) a secret draw decides whether it is kept — reservoir sampling, so CHECK_SLOTS runs end up kept,
  every timed run equally likely. Kept: what the run left in every buffer and the mix offsets it was given;
  the worker rebuilds those inputs and the parent checks the outputs against the reference of them. The
  choice is made after the run, so a kernel cannot know whether the run it is in will be checked.

On CPU the preproc is a TIR function of ours compiled once per signature of ranks and dtypes (generic_key: its
shapes are variables) and passed to TVM's ``time_evaluator`` as ``f_preproc``; the timed function is a one-line compiled wrapper that calls the kernel
(``T.call_packed``, ~10 ns), because the preproc receives the timed function's arguments and needs the
uploaded and alternate inputs and its random state besides the kernel's. On other devices the preproc is a
Python callback (NumPy + copies) and the kernel itself is timed.
"""
from __future__ import annotations

import hashlib
import os
import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

Params = list[tuple[str, tuple[int, ...], str]]
_REGISTERED: dict[str, Any] = {}  # keeps registered functions (and their modules) alive
_KERNEL_IDS = itertools.count()
# Timed runs whose outputs are kept for the parent to check (a uniform sample of each side's timed runs)
CHECK_SLOTS = 4


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
    return np.asarray(np.take(a, perm, axis=axis), order="C")


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
    """Kernel params, then each input's uploaded copy, alternate and random mask, then the check slots (each
    param's CHECK_SLOTS copies, the runs' numbers and mix offsets), then the state (see `state_size`)."""
    args = [f"p{i}: T.Buffer({tuple(s)!r}, {d!r})" for i, (_n, s, d) in enumerate(params)]
    for i in inputs:
        _n, s, d = params[i]
        args += [f"o{i}: T.Buffer({tuple(s)!r}, {d!r})", f"a{i}: T.Buffer({tuple(s)!r}, {d!r})",
                 f"m{i}: T.Buffer(({math.prod(s)},), {_bits(d)!r})"]
    args += [f"c{i}: T.Buffer(({CHECK_SLOTS * max(1, math.prod(s))},), {d!r})"
             for i, (_n, s, d) in enumerate(params)]
    args.append(f'cs: T.Buffer(({CHECK_SLOTS * (1 + len(inputs))},), "uint32")')
    return ", ".join(args + [f'st: T.Buffer(({state_size(len(inputs))},), "uint32")'])


def _dims(i: int, shape: Sequence[int]) -> list[str]:
    return [f"d{i}_{k}" for k in range(len(shape))]


def _size(i: int, shape: Sequence[int]) -> str:
    """Param i's element count as an expression of its dim variables."""
    return "(" + (" * ".join(_dims(i, shape)) or "1") + ")"


def generic_key(params: Params) -> list[tuple[int, str, bool]]:
    """What the compiled mix and wrapper depend on: each param's rank, dtype and whether it is empty (its
    shape is a variable: light_densenet121's 253 kernels of different shapes shared a few preprocs instead of
    compiling one each, ~1.8 s a kernel)."""
    return [(len(s), d, math.prod(s) == 0) for _n, s, d in params]


def _head(params: Params, inputs: Sequence[int]) -> tuple[str, list[str]]:
    """The arguments `_signature` lists, as handles bound in the body to buffers whose dims are variables: the
    copies, masks and check slots are matched against the params' dims (a call with any other size fails)."""
    names = [f"p{i}" for i in range(len(params))] + [f"{x}{i}" for i in inputs for x in "oam"]
    names += [f"c{i}" for i in range(len(params))] + ["cs", "st"]
    body = [f"    {d} = T.int32()" for i, (_n, s, _d) in enumerate(params) for d in _dims(i, s)]
    for i, (_n, s, d) in enumerate(params):
        shape = "(" + "".join(f"{x}, " for x in _dims(i, s)) + ")"
        body.append(f"    p{i} = T.match_buffer(h_p{i}, {shape}, {d!r})")
        if i in inputs:
            body += [f"    o{i} = T.match_buffer(h_o{i}, {shape}, {d!r})",
                     f"    a{i} = T.match_buffer(h_a{i}, {shape}, {d!r})",
                     f"    m{i} = T.match_buffer(h_m{i}, ({_size(i, s)},), {_bits(d)!r})"]
    for i, (_n, s, d) in enumerate(params):
        slots = f"{CHECK_SLOTS} * {_size(i, s)}" if math.prod(s) else f"{CHECK_SLOTS}"
        body.append(f"    c{i} = T.match_buffer(h_c{i}, ({slots},), {d!r})")
    body += [f'    cs = T.match_buffer(h_cs, ({CHECK_SLOTS * (1 + len(inputs))},), "uint32")',
             f'    st = T.match_buffer(h_st, ({state_size(len(inputs))},), "uint32")']
    return ", ".join(f"h_{n}: T.handle" for n in names), body


def state_size(n_inputs: int) -> int:
    """The preproc's state: [mix rng, mode (1: final), check rng, timed runs so far, 1 when the last call was a
    mixed timed run, that run's mix offset per input]."""
    return 5 + n_inputs


def _xorshift(k: int) -> list[str]:
    return [f"    st[{k}] = st[{k}] ^ (st[{k}] << T.uint32(13))", f"    st[{k}] = st[{k}] ^ (st[{k}] >> T.uint32(17))",
            f"    st[{k}] = st[{k}] ^ (st[{k}] << T.uint32(5))"]


def _check_body(params: Params, inputs: Sequence[int]) -> list[str]:
    """Reservoir sampling of the timed runs, decided after each run: when the previous call was a mixed timed
    run, it is the t-th; the first CHECK_SLOTS fill the slots, then a secret draw r in [0, t) keeps it in slot r
    when r < CHECK_SLOTS (every timed run ends up in the slots with the same probability). Kept: every param as
    the run left it and the run's offsets, from which the worker rebuilds the inputs the run was given."""
    width = 1 + len(inputs)
    lines = ["    if st[4] == T.uint32(1):", "        st[3] = st[3] + T.uint32(1)"]
    lines += ["    " + ln for ln in _xorshift(2)]
    lines += [f"        d = T.if_then_else(st[3] <= T.uint32({CHECK_SLOTS}), st[3] - T.uint32(1), st[2] % st[3])",
              f"        if d < T.uint32({CHECK_SLOTS}):",
              '            r = T.Cast("int32", d)', f"            cs[r * {width}] = st[3]"]
    lines += [f"            cs[r * {width} + {1 + k}] = st[{5 + k}]" for k in range(len(inputs))]
    for i, (_n, shape, _d) in enumerate(params):
        if math.prod(shape):
            n = _size(i, shape)
            lines.append(f"            for e in range({n}):\n                c{i}[r * {n} + e] = f{i}[e]")
    return lines + ["    st[4] = T.uint32(0)"]


def _indent(lines: list[str]) -> list[str]:
    """Lines (some holding several) one level deeper: the functions are methods of an ir_module class."""
    return ["    " + ln for text in lines for ln in text.split("\n")]


def _views(params: Params) -> list[str]:
    return [f"    f{i} = T.decl_buffer(({_size(i, s)},), {d!r}, data=p{i}.data)"
            for i, (_n, s, d) in enumerate(params) if math.prod(s)]


def _mix_script(params: Params, outputs: Sequence[int]) -> str:
    """Two functions: `mix`, the preproc (a check of the previous timed run, then outputs poisoned; each input
    element from the uploaded copy or the alternate as the random mask, read from a random offset (a xorshift
    step per input and run), says; in final mode the uploaded copy), and `capture`, the check alone (after
    the last run of a round)."""
    inputs = [i for i in range(len(params)) if i not in outputs]
    sig, head = _head(params, inputs)
    body = ['        T.func_attr({"global_symbol": "mix", "tirx.noalias": True})']
    body += _indent(head + _views(params) + _check_body(params, inputs))
    for i, (_n, shape, dtype) in enumerate(params):
        if math.prod(shape) == 0:
            continue
        n = _size(i, shape)
        if i in outputs:
            body += _indent([f"    for e in range({n}):\n        f{i}[e] = {_literal(dtype)}"])
            continue
        u = _bits(dtype)  # blend as bits: g ^ ((g ^ h) & mask), mask all ones or zeros (vectorises)
        pick = (f"T.reinterpret({dtype!r}, T.reinterpret({u!r}, g{{i}}[{{k}}]) ^ ((T.reinterpret({u!r}, g{{i}}[{{k}}])"
                f" ^ T.reinterpret({u!r}, h{{i}}[{{k}}])) & m{{i}}[{{j}}]))")
        if dtype == "bool":
            pick = "T.if_then_else(m{i}[{j}] != T.uint8(0), h{i}[{k}], g{i}[{k}])"
        lines = [f"    g{i} = T.decl_buffer(({n},), {dtype!r}, data=o{i}.data)",
                 f"    h{i} = T.decl_buffer(({n},), {dtype!r}, data=a{i}.data)", *_xorshift(0),
                 f"    off{i} = T.Cast(\"int32\", st[0] % T.Cast(\"uint32\", {n}))",
                 f"    st[{5 + inputs.index(i)}] = T.Cast(\"uint32\", off{i})",
                 "    if st[1] == T.uint32(1):",
                 f"        for e in range({n}):\n            f{i}[e] = g{i}[e]",
                 "    else:",
                 f"        for e in range({n} - off{i}):",
                 "            f{i}[e] = ".format(i=i) + pick.format(i=i, j=f"e + off{i}", k="e"),
                 f"        for e in range(off{i}):",
                 f"            f{i}[{n} - off{i} + e] = " + pick.format(i=i, j="e", k=f"{n} - off{i} + e")]
        body += _indent(lines)
    body += ["        if st[1] == T.uint32(0):", "            st[4] = T.uint32(1)"]  # a mixed run follows
    capture = ['        T.func_attr({"global_symbol": "capture", "tirx.noalias": True})']
    capture += _indent(head + _views(params) + _check_body(params, inputs))
    return ("@I.ir_module\nclass Module:\n"
            f"    @T.prim_func\n    def mix({sig}):\n" + "\n".join(body) +
            f"\n\n    @T.prim_func\n    def capture({sig}):\n" + "\n".join(capture) + "\n")


def _call_script(params: Params, outputs: Sequence[int], kernel: str) -> str:
    inputs = [i for i in range(len(params)) if i not in outputs]
    args = ", ".join(f"p{i}" for i in range(len(params)))
    sig, head = _head(params, inputs)
    return (f"@T.prim_func\ndef call({sig}):\n" + '    T.func_attr({"global_symbol": "call"})\n'
            + "\n".join(head) + f'\n    T.evaluate(T.call_packed("{kernel}", {args}))\n')


def _compile(script: str, name: str):
    import tvm

    parsed = tvm.script.from_source(script)  # our own text, not a candidate's
    mod = parsed if isinstance(parsed, tvm.IRModule) else tvm.IRModule({name: parsed})
    return tvm.compile(mod, target="llvm").mod


def registered_mix(params: Params, outputs: Sequence[int]) -> str:
    """Global name of the compiled CPU preproc for a signature (compiled on first use)."""
    import tvm

    params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
    outputs = sorted(int(i) for i in outputs)
    name = "leka.mix." + hashlib.sha1(repr((generic_key(params), outputs, CHECK_SLOTS)).encode()).hexdigest()[:16]
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
    name = "leka.timed." + hashlib.sha1(repr((generic_key(params), outputs, CHECK_SLOTS)).encode()).hexdigest()[:16]
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


class _Reservoir:
    """The callback path's check slots: the compiled preproc's reservoir sampling, in Python."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
        self.seen = 0
        self.slots: list[dict | None] = [None] * CHECK_SLOTS

    def offer(self, given: list[np.ndarray], left: Callable[[], tuple[list, list]]) -> None:
        """The next timed run, which was given `given`; `left()`: its inputs and outputs as it left them."""
        self.seen += 1
        r = self.seen - 1 if self.seen <= CHECK_SLOTS else int(self.rng.integers(self.seen))
        if r < CHECK_SLOTS:
            inputs_after, outputs = left()
            self.slots[r] = {"run": self.seen, "inputs": given, "inputs_after": inputs_after, "outputs": outputs}


class Preproc:
    """Timing of one loaded kernel with the preproc above. ``timer(n)`` → (time_evaluator, its arguments);
    ``checked_runs()`` → the timed runs kept for the parent to check."""

    def __init__(self, module, entry: str, tensors: list, params: Params, outputs: Sequence[int], dev,
                 reuse: "Preproc | tuple | None" = None, callback: bool = False,
                 graph_outputs: Callable[[], list] | None = None):
        """`graph_outputs`: a Relax VM's outputs of its last stateful call (then `module` is the VM's module,
        timed through `invoke_stateful` with the inputs set on the VM: graphs allocate their outputs)."""
        import tvm

        self.module, self.entry = module, entry
        self.kernel = kernel = module[entry]
        self.params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
        self.outputs = sorted(int(i) for i in outputs)
        self.inputs = [i for i in range(len(params)) if i not in self.outputs]
        self.dev, self.tensors = dev, tensors
        seed = int.from_bytes(os.urandom(8), "little")  # neither the shuffle nor the mix is predictable
        rng = np.random.default_rng(seed)
        self.uploaded = uploaded = [tensors[i].numpy() for i in self.inputs]
        alt = [alternate(a, rng) for a in uploaded]
        self.alt = alt
        for i, a in zip(self.inputs, alt):  # untimed runs (warm-up, calibration) see the alternate inputs
            tensors[i].copyfrom(a)
        # callback: the NumPy preproc on CPU too (Relax graphs: the VM's main takes only the inputs)
        self.cpu = not callback and dev.dlpack_device_type() == tvm.cpu().dlpack_device_type()
        if self.cpu:
            self.picks = [rng.integers(0, 2, a.size, dtype=bool) for a in uploaded]
            masks = [np.where(p, np.iinfo(_bits(a.dtype)).max, 0).astype(_bits(a.dtype))
                     for p, a in zip(self.picks, uploaded)]
            extra = [tvm.runtime.tensor(x, dev) for trio in zip(uploaded, alt, masks) for x in trio]
            self.slots = [tvm.runtime.tensor(np.zeros(CHECK_SLOTS * max(1, math.prod(s)), d), dev)
                          for _n, s, d in self.params]
            self.slot_runs = tvm.runtime.tensor(np.zeros(CHECK_SLOTS * (1 + len(self.inputs)), np.uint32), dev)
            state = np.zeros(state_size(len(self.inputs)), np.uint32)
            state[0], state[2] = (seed & 0xFFFFFFFF) | 1, int.from_bytes(os.urandom(4), "little") | 1
            self.state = tvm.runtime.tensor(state, dev)
            self.args = list(tensors) + extra + self.slots + [self.slot_runs, self.state]
            self.mix_name = self._register_mix()
            self.capture = _REGISTERED[self.mix_name][0]["capture"]
            self.kernel_name, self.call, _ = compiled_call(kernel, self.params, self.outputs, reuse)
            if not isinstance(reuse, Preproc):  # bind the wrapper to this kernel now (runs it once, untimed)
                tvm.register_global_func(self.kernel_name, kernel, override=True)
                _REGISTERED[self.kernel_name] = kernel
                self.call["call"](*self.args)
        else:
            fills = [array(*self.params[i][1:]) for i in self.outputs]
            self._host = (uploaded, alt, rng, fills)
            self._restore = False
            self._given: list[np.ndarray] | None = None  # inputs of the last mixed timed run
            self._reservoir = _Reservoir()
            self._graph_outputs = graph_outputs
            self.mix_name = f"leka.mix.callback.{next(_KERNEL_IDS)}"
            tvm.register_global_func(self.mix_name, self._callback, override=True)
            _REGISTERED[self.mix_name] = self._callback

    def _register_mix(self) -> str:
        return registered_mix(self.params, self.outputs)

    def _left(self) -> tuple[list, list]:
        ins = [self.tensors[i].numpy() for i in self.inputs]
        if self._graph_outputs is None:
            return ins, [self.tensors[j].numpy() for j in self.outputs]
        return ins, [o.numpy() for o in self._graph_outputs()]

    def _offer(self) -> None:
        """The callback path: the last mixed timed run, for the reservoir's draw."""
        if self._given is not None:
            self._reservoir.offer(self._given, self._left)
        self._given = None

    def _callback(self, *_args) -> None:
        self._offer()
        tensors = self.tensors
        uploaded, alt, rng, fills = self._host
        given = [o if self._restore else mix(o, a, rng) for o, a in zip(uploaded, alt)]
        for i, x in zip(self.inputs, given):
            tensors[i].copyfrom(x)
        for i, fill in zip(self.outputs, fills):
            tensors[i].copyfrom(fill)
        self._given = None if self._restore else given

    def timer(self, number: int, final: bool = False):
        """TVM's time_evaluator over `number` runs (one per repeat), the preproc before each and the check of
        the last run after them; `final`: the preproc restores the uploaded inputs instead of mixing (the
        checked run)."""
        if final:  # the run before the checked one (time_evaluator's untimed first call) sees the alternate
            for i, a in zip(self.inputs, self.alt):
                self.tensors[i].copyfrom(a)
        if self.cpu:
            state = self.state.numpy()
            state[1], state[4] = (1 if final else 0), 0  # time_evaluator's first call is untimed: no check
            self.state.copyfrom(state)
            f = self.call.time_evaluator("call", self.dev, number=1, repeat=number, f_preproc=self.mix_name)
            args, after = self.args, lambda: self.capture(*self.args)
        else:
            self._restore, self._given = final, None
            stateful = self._graph_outputs is not None
            f = self.module.time_evaluator("invoke_stateful" if stateful else self.entry, self.dev, number=1,
                                           repeat=number, f_preproc=self.mix_name)
            args, after = ([self.entry] if stateful else list(self.tensors)), self._offer

        def timed(*a):
            res = f(*a)
            after()  # the last run of the round is a candidate for a check too
            return res
        return timed, args

    def checked_runs(self) -> list[dict[str, Any]]:
        """The timed runs kept for checking: the run's number, the inputs it was given, its inputs and outputs
        as it left them (rebuilt from the mix offsets the compiled preproc recorded)."""
        if not self.cpu:
            return [s for s in self._reservoir.slots if s is not None]
        width = 1 + len(self.inputs)
        runs = self.slot_runs.numpy().reshape(CHECK_SLOTS, width)
        kept = [t.numpy() for t in self.slots]
        out = []
        for r in range(CHECK_SLOTS):
            if runs[r, 0] == 0:
                continue
            left = [k[r * math.prod(s):(r + 1) * math.prod(s)].reshape(s) for k, (_n, s, _d) in zip(kept, self.params)]
            given = [np.where(np.roll(p, -int(off)).reshape(o.shape), a, o)
                     for p, o, a, off in zip(self.picks, self.uploaded, self.alt, runs[r, 1:])]
            out.append({"run": int(runs[r, 0]), "inputs": given, "inputs_after": [left[i] for i in self.inputs],
                        "outputs": [left[j] for j in self.outputs]})
        return out
