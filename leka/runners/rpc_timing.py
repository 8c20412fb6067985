"""Poison before every timed run on a remote device whose server is stock TVM (`python -m tvm.exec.rpc_server`,
nothing of ours registered there).

Locally the preproc of leka.runners.poison is a global function passed to time_evaluator's ``f_preproc``; a
stock server has no such global and TVM's RPC cannot register one. What it can do is load modules and import
one into another (``tvm.rpc.server.ImportModule``), and a compiled ``T.call_packed`` looks a name up in its
module's imports before the global table. So a small library of ours is built for the board's target
(rpc_build.py) and uploaded, twice, next to the candidate's:

- ``mix``: poison.py's mix script, unchanged (outputs poisoned, inputs a fresh random mix of the uploaded
  inputs and their alternate, or those inputs in final mode, and whatever else it does per call);
- ``leka_call``, the timed function: a wrapper that runs the mix and the kernel on alternate calls (a phase
  flag it flips itself); its module imports the other copy (for the mix), then the candidate's module.

``time_evaluator(leka_call, number=1, repeat=2n-1)`` calls it 2n times: its untimed first call (TVM makes it
"to activate lazy components") is the mix, then kernel, mix, kernel, ...; the repeats that timed a mix are
dropped. So each of the n timed runs follows the poison and fresh inputs, on the board, and a round of n runs
is one RPC round trip, as before (docs/evaluator.md, "Remote devices").
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
from typing import Any, Sequence

import numpy as np

from .poison import Params, _bits, _mix_script, _signature, alternate, array, mix

CALL_SYMBOL = "leka_call"
MIX_SYMBOL = "mix"  # the mix script's own name: the wrapper finds it in the mix module, imported first
_BUFFER = re.compile(r"(\w+): T\.Buffer\((\([^)]*\)), ['\"](\w+)['\"]\)")


def _norm(params: Sequence, outputs: Sequence[int]) -> tuple[Params, list[int]]:
    return ([(str(n), tuple(int(d) for d in s), str(t)) for n, s, t in params], sorted(int(i) for i in outputs))


def signature_key(target: str, params: Sequence, outputs: Sequence[int], entry: str) -> str:
    """What the timing library depends on."""
    return hashlib.sha1(repr((target, _norm(params, outputs), entry)).encode()).hexdigest()[:16]


def mix_params(params: Params, outputs: Sequence[int]) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, dtype) of every parameter of poison.py's mix, in order (the kernel's come first)."""
    inputs = [i for i in range(len(params)) if i not in outputs]
    return [(n, tuple(ast.literal_eval(s)), d) for n, s, d in _BUFFER.findall(_signature(params, inputs))]


def call_script(params: Params, outputs: Sequence[int], entry: str) -> str:
    """The timed wrapper: the mix (on the untimed first call of each timer) and the kernel in turn."""
    names = [n for n, _s, _d in mix_params(params, outputs)]
    inputs = [i for i in range(len(params)) if i not in outputs]
    kernel_args = ", ".join(names[:len(params)])
    return (f"@T.prim_func\ndef {CALL_SYMBOL}({_signature(params, inputs)}, ph: T.Buffer((1,), \"uint32\")):\n"
            f'    T.func_attr({{"global_symbol": "{CALL_SYMBOL}"}})\n'
            "    if ph[0] == T.uint32(0):\n"
            "        ph[0] = T.uint32(1)\n"
            f'        T.evaluate(T.call_packed("{MIX_SYMBOL}", {", ".join(names)}))\n'
            "    else:\n"
            "        ph[0] = T.uint32(0)\n"
            f'        T.evaluate(T.call_packed("{entry}", {kernel_args}))\n')


def timing_module(params: Sequence, outputs: Sequence[int], entry: str) -> Any:
    """One IRModule holding poison.py's mix and the wrapper `leka_call` for a kernel signature (our own
    scripts, never a candidate's). Its library is loaded twice on the board: the wrapper of one copy finds
    the mix in the other, imported (a module's own functions are not among its imports)."""
    import tvm

    params, outputs = _norm(params, outputs)
    parsed = tvm.script.from_source(_mix_script(params, outputs))
    funcs = dict(parsed.functions_items()) if isinstance(parsed, tvm.IRModule) else {
        tvm.ir.GlobalVar(MIX_SYMBOL): parsed.with_attr("global_symbol", MIX_SYMBOL)}
    call = tvm.script.from_source(call_script(params, outputs, entry))
    funcs[tvm.ir.GlobalVar(CALL_SYMBOL)] = call
    return tvm.IRModule(funcs)


class RemoteWrapper:
    """The timing library loaded on the board and bound to one loaded kernel (rpc.RPCLoaded)."""

    def __init__(self, loaded: Any, lib: bytes):
        from .rpc import upload_module

        self.dev = loaded.dev
        self.call = upload_module(loaded.session, lib, loaded.suffix)
        mixmod = upload_module(loaded.session, lib, loaded.suffix)  # a second file: a module of its own
        link = loaded.session.get_function("tvm.rpc.server.ImportModule")
        link(self.call, mixmod)  # first: the mix's name resolves to ours whatever the candidate's module holds
        link(self.call, loaded.module)
        self.timers: dict[int, Any] = {}

    def times(self, number: int, args: Sequence[Any]) -> list[float]:
        """Seconds of `number` kernel runs, each right after a mix, in one RPC call: time_evaluator(leka_call,
        number=1, repeat=2*number-1) calls mix (untimed), kernel, mix, kernel, ...; the repeats that timed a
        mix are dropped."""
        if number not in self.timers:
            self.timers[number] = self.call.time_evaluator(CALL_SYMBOL, self.dev, number=1, repeat=2 * number - 1)
        return list(self.timers[number](*args).results[::2])


class RemotePreproc:
    """One arming of a remote kernel's timing: the arrays poison.py's mix takes, made here and uploaded, and
    the timed runs. The attribute names are poison.Preproc's, whose `checked_runs` reads the timed runs the
    mix kept for checking (when it keeps any) the same way here. Without a RemoteWrapper (GPU boards: the mix
    is CPU code) this process writes the poison and one fresh mix before each round of `number` runs."""

    cpu = True

    def __init__(self, loaded: Any, outputs: Sequence[int], wrapper: RemoteWrapper | None):
        import tvm

        # no reference to `loaded` itself: a cycle would keep the RPC session open after its last user
        self.module, self.entry, self.wrapper = loaded.module, loaded.entry, wrapper
        self.dev, self.tensors = loaded.dev, loaded.tensors
        self.params, self.outputs = _norm(loaded.params, outputs)
        self.inputs = [i for i in range(len(self.params)) if i not in self.outputs]
        seed = int.from_bytes(os.urandom(8), "little")  # neither the shuffle nor the mix is predictable
        self.rng = rng = np.random.default_rng(seed)
        self.uploaded = [self.tensors[i].numpy() for i in self.inputs]
        self.alt = [alternate(a, rng) for a in self.uploaded]
        for i, a in zip(self.inputs, self.alt):  # untimed runs (warm-up, calibration) see the alternates
            self.tensors[i].copyfrom(a)
        self.fills = [array(*self.params[i][1:]) for i in self.outputs]
        self.slots: list[Any] = []
        self.final = False
        if wrapper is not None:
            self.picks = [rng.integers(0, 2, a.size, dtype=bool) for a in self.uploaded]
            arrays = self._mix_arrays(seed)
            self.args = list(self.tensors) + [tvm.runtime.tensor(a, self.dev) for a in arrays[len(self.params):]]
            names = [n for n, _s, _d in mix_params(self.params, self.outputs)]
            by_name = dict(zip(names, self.args))
            self.state = by_name["st"]
            self.slots = [by_name[f"c{i}"] for i in range(len(self.params)) if f"c{i}" in by_name]
            self.slot_runs = by_name.get("cs")
            self.args.append(tvm.runtime.tensor(np.zeros(1, np.uint32), self.dev))  # the wrapper's phase

    def _mix_arrays(self, seed: int) -> list[np.ndarray | None]:
        """Host values of the mix's parameters by their names in poison.py's signature: o/a/m per input
        (uploaded, alternate, mask), st (the state: mix seed, mode, then a check seed where it has one),
        anything else (kept runs) zeros; the kernel's own params come first (None: the tensors)."""
        n_kernel = len(self.params)
        per_input = {f"{x}{i}": v for i, up, alt, pick in zip(self.inputs, self.uploaded, self.alt, self.picks)
                     for x, v in (("o", up), ("a", alt),
                                  ("m", np.where(pick, np.iinfo(_bits(up.dtype)).max, 0).astype(_bits(up.dtype))))}
        out: list[np.ndarray | None] = [None] * n_kernel
        for name, shape, dtype in mix_params(self.params, self.outputs)[n_kernel:]:
            if name in per_input:
                out.append(np.asarray(per_input[name], order="C"))
                continue
            value = np.zeros(shape, dtype)
            if name == "st":
                value[0] = (seed & 0xFFFFFFFF) | 1
                if value.size > 2:
                    value[2] = int.from_bytes(os.urandom(4), "little") | 1
            out.append(value)
        return out

    def time(self, number: int, final: bool) -> float:
        """Mean seconds per run of `number` timed runs, each after the mix; `final`: after the restore."""
        if self.wrapper is None:
            return self._time_round(number, final)
        if final != self.final:  # the mode flag only: the rest of the state is the board's
            state = self.state.numpy()
            state[1] = 1 if final else 0
            self.state.copyfrom(state)
            self.final = final
        return float(np.mean(self.wrapper.times(number, self.args)))

    def _time_round(self, number: int, final: bool) -> float:
        for i, up, alt in zip(self.inputs, self.uploaded, self.alt):
            self.tensors[i].copyfrom(up if final else mix(up, alt, self.rng))
        for i, fill in zip(self.outputs, self.fills):
            self.tensors[i].copyfrom(fill)
        timer = self.module.time_evaluator(self.entry, self.dev, number=number, repeat=1)
        return float(timer(*self.tensors).mean)

    def checked_runs(self) -> list[dict[str, Any]]:
        """The timed runs the board-side mix kept, read as poison.Preproc reads its own."""
        from .poison import Preproc

        read = getattr(Preproc, "checked_runs", None)
        return read(self) if read is not None and self.slots else []
