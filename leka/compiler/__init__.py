"""One build interface for every backend and preset: build(mod, target) -> Artifact.

Backends live in leka.compiler.backends (one per family, first that applies wins); baseline schedules
(naive / dlight) in default_schedule. CompileError carries TVM's first meaningful line.
"""
from __future__ import annotations

from leka.targets import TargetPreset, get_target

from .artifact import Allocation, Artifact, KernelLaunch, first_line
from .backends import BACKENDS
from .errors import CompileError
from .schedules import RULE_SETS, baseline_module, default_schedule

__all__ = ["Allocation", "Artifact", "BACKENDS", "CompileError", "KernelLaunch", "RULE_SETS", "baseline_module",
           "build", "default_schedule", "first_line"]


def build(mod, target: TargetPreset | str | dict) -> Artifact:
    """Build a tvm.IRModule (TIR "main", or a relax "main" for graph tasks) or a PrimFunc for a target."""
    preset = get_target(target)
    for backend in BACKENDS:
        if backend.applies(preset):
            return backend.build(mod, preset)
    raise CompileError(f"no backend for target family {preset.family!r} ({preset.name})")
