"""CPU backend (LLVM): host x86 and cross aarch64 boards (rpi4/rpi5)."""
from __future__ import annotations

import os
import tempfile

from leka.targets import TargetPreset

from ..artifact import Artifact
from .base import as_module, build_relax, is_relax, lower_tir, make_artifact, relax_params, tir_params


class LLVMBackend:
    family = "cpu"

    def applies(self, preset: TargetPreset) -> bool:
        return preset.family == "cpu"

    def build(self, mod, preset: TargetPreset) -> Artifact:
        import tvm

        mod = as_module(mod)
        if is_relax(mod):
            ex, secs = build_relax(mod, preset)
            lib = ex.mod.imports[0] if len(ex.mod.imports) else ex.mod
            return make_artifact(preset, source_kind="llvm-ir", source=_inspect(lib, "ll"), asm=_inspect(lib, "asm"),
                                 compile_s=secs, binary_bytes=_object_bytes(lib), allocations=[], kernels=[],
                                 params=relax_params(mod), executable=ex, is_relax=True)
        lowered, secs = lower_tir(mod, preset)
        lib = lowered.runtime_module
        return make_artifact(preset, source_kind="llvm-ir", source=_inspect(lib, "ll"), asm=_inspect(lib, "asm"),
                             compile_s=secs, binary_bytes=_object_bytes(lib), allocations=lowered.allocations,
                             kernels=[], params=tir_params(mod), executable=tvm.runtime.Executable(lib))


def _inspect(lib, fmt: str) -> str:
    try:
        return lib.inspect_source(fmt)
    except Exception:  # noqa: BLE001 - some module kinds have no such view
        return ""


def _object_bytes(lib) -> int:
    """Size of the compiled object file (code + data), a stand-in for the on-board binary size."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lib.o")
        try:
            lib.write_to_file(path)
            return os.path.getsize(path)
        except Exception:  # noqa: BLE001
            return -1
