"""Shared GPU backend logic (CUDA and OpenCL): device source, launch geometry, the binding and race checks."""
from __future__ import annotations

from leka.targets import TargetPreset

from ..artifact import Artifact
from ..errors import CompileError
from ..races import shared_races
from .base import as_module, build_relax, is_relax, lower_tir, make_artifact, relax_params, tir_params

NO_BINDING = ("no thread binding: {target} needs a GPU schedule (bind loops to blockIdx/threadIdx) — "
              "schedule it or use default_schedule")


class GPUBackend:
    family = ""
    source_kind = ""

    def applies(self, preset: TargetPreset) -> bool:
        return preset.family == self.family

    def build(self, mod, preset: TargetPreset) -> Artifact:
        import tvm

        mod = as_module(mod)
        if is_relax(mod):
            ex, secs = build_relax(mod, preset)
            src = _device_source(ex.mod)
            return make_artifact(preset, source_kind=self.source_kind, source=src, asm=None, compile_s=secs,
                                 binary_bytes=len(src.encode()), allocations=[], kernels=[],
                                 params=relax_params(mod), executable=ex, is_relax=True)
        lowered, secs = lower_tir(mod, preset)
        # TVM 0.27 lowers an unscheduled function as host code for a GPU target without complaint.
        if not lowered.device_mods or not lowered.kernels:
            raise CompileError(NO_BINDING.format(target=preset.name))
        races = [r for dmod in lowered.device_mods.values() for r in shared_races(dmod)]
        if races:  # wrong on a GPU, though a serial OpenCL (PoCL) may pass it
            raise CompileError(f"{preset.name}: shared-memory race: {races[0]}")
        src = _device_source(lowered.runtime_module)
        return make_artifact(preset, source_kind=self.source_kind, source=src, asm=None, compile_s=secs,
                            binary_bytes=len(src.encode()), allocations=lowered.allocations,
                            kernels=lowered.kernels, params=tir_params(mod),
                            executable=tvm.runtime.Executable(lowered.runtime_module),
                            launch_bindings=lowered.launch_bindings, workspaces=lowered.workspaces)


def _device_source(mod) -> str:
    """Device source from the first imported device module, searching one level deeper for relax."""
    queue = [mod]
    while queue:
        m = queue.pop(0)
        if m.kind in ("cuda", "opencl"):
            return m.inspect_source()
        queue.extend(m.imports)
    return ""
