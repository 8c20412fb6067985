"""Shared steps of every backend: normalise the input, lower + codegen with timing, wrap errors."""
from __future__ import annotations

import time
from typing import Any, Protocol

from leka.targets import TargetPreset

from ..artifact import Artifact, first_line
from ..errors import CompileError
from ..lowering import Lowered, lower_and_build

ENTRY = "main"


class Backend(Protocol):
    """One family's builder: the first in BACKENDS that applies(preset) builds."""

    def applies(self, preset: TargetPreset) -> bool: ...
    def build(self, mod: Any, preset: TargetPreset) -> Artifact: ...


def as_module(mod_or_func) -> Any:
    """IRModule with the entry function named "main" (a bare PrimFunc becomes that entry)."""
    import tvm

    if isinstance(mod_or_func, tvm.tirx.PrimFunc):
        func = mod_or_func
        if func.attrs is None or func.attrs.get("global_symbol") != ENTRY:
            func = func.with_attr("global_symbol", ENTRY)
        return tvm.IRModule({ENTRY: func})
    if isinstance(mod_or_func, tvm.IRModule):
        if not any(gv.name_hint == ENTRY for gv in mod_or_func.get_global_vars()):
            names = [gv.name_hint for gv in mod_or_func.get_global_vars()]
            raise CompileError(f"module has no function named {ENTRY!r} (found: {', '.join(names) or 'none'})")
        return mod_or_func
    raise CompileError(f"cannot build a {type(mod_or_func).__name__}: pass a tvm.IRModule or tvm.tirx.PrimFunc")


def is_relax(mod) -> bool:
    import tvm

    return any(isinstance(f, tvm.relax.Function) for _, f in mod.functions_items())


def tir_params(mod) -> list[tuple[str, tuple[int, ...], str]]:
    func = mod[ENTRY]
    out = []
    for p in func.params:
        shape = tuple(int(s) for s in p.shape) if getattr(p, "shape", None) is not None else ()
        out.append((p.name, shape, str(p.dtype)))
    return out


def relax_params(mod) -> list[tuple[str, tuple[int, ...], str]]:
    """Graph inputs of relax "main" (0.27 relax Vars carry name, shape and dtype like TIR params)."""
    out = []
    for p in mod[ENTRY].params:
        ty = getattr(p, "ty", None)
        shape = getattr(ty, "shape", None) if ty is not None else getattr(p, "shape", None)
        dims = tuple(int(s) for s in shape) if shape is not None else ()
        out.append((p.name, dims, str(getattr(ty, "dtype", None) or p.dtype)))
    return out


def lower_tir(mod, preset: TargetPreset) -> tuple[Lowered, float]:
    target = tvm_target(preset)
    t0 = time.perf_counter()
    try:
        lowered = lower_and_build(mod, target, [n for n, _, _ in tir_params(mod)])
    except CompileError:
        raise
    except Exception as e:  # noqa: BLE001 - TVM raises many error types
        raise CompileError(f"{preset.name}: {first_line(e)}") from None
    return lowered, time.perf_counter() - t0


def build_relax(mod, preset: TargetPreset) -> tuple[Any, float]:
    import tvm

    target = tvm_target(preset)
    t0 = time.perf_counter()
    try:
        ex = tvm.compile(mod, target=target)
    except Exception as e:  # noqa: BLE001
        raise CompileError(f"{preset.name}: {first_line(e)}") from None
    return ex, time.perf_counter() - t0


def tvm_target(preset: TargetPreset):
    import tvm

    try:
        return tvm.target.Target(preset.target)
    except Exception as e:  # noqa: BLE001
        raise CompileError(f"invalid target for {preset.name}: {first_line(e)}") from None


def make_artifact(preset: TargetPreset, **fields) -> Artifact:
    return Artifact(target=preset, family=preset.family, entry=ENTRY, **fields)
