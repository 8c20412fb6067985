"""Runners: execute a built Artifact on this machine's device.

    loaded = get_runner(preset).load(artifact)
    loaded.upload(arrays)      # every param in order (inputs then outputs), host -> device
    loaded.run()               # one synchronous execution
    outs = loaded.download()   # every param, device -> host
    loaded.arm(outputs)        # before every later timed run: outputs poisoned, inputs mixed (poison.py)
    secs = loaded.time(number) # mean seconds per run over `number` timed runs

llvm: TVM runtime on tvm.cpu(); opencl-pyopencl: TVM's OpenCL C replayed through pyopencl with TVM's
launch geometry; cuda: TVM runtime on tvm.cuda() (GPU needed); edge presets are build-only.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from leka.errors import NotRunnableError
from leka.targets import TargetPreset, get_target

from .base import RunnerError

__all__ = ["Loaded", "Runner", "RunnerError", "get_runner"]


class Loaded(Protocol):
    def upload(self, arrays: Sequence[np.ndarray]) -> None: ...
    def run(self) -> None: ...
    def download(self) -> list[np.ndarray]: ...
    def arm(self, outputs: Sequence[int]) -> None: ...
    def time(self, number: int, final: bool = False) -> float: ...


class Runner(Protocol):
    name: str

    def load(self, artifact) -> Loaded: ...


class BuildOnlyRunner:
    name = "build-only"

    def __init__(self, preset: TargetPreset):
        self.preset = preset

    def load(self, artifact) -> Loaded:
        why = self.preset.why_not_runnable or f"{self.preset.name} is build-only here"
        if "docs/targets.md" not in why:
            why += " (needs a board: see docs/targets.md)"
        raise NotRunnableError(why)


def get_runner(preset: TargetPreset | str | dict) -> Runner:
    preset = get_target(preset)
    if preset.family == "cuda" and preset.name in ("cuda", "custom"):
        from .cuda import CUDARunner

        return CUDARunner(preset)  # raises NotRunnableError at load when no GPU is present
    if not preset.runnable or preset.runner is None:
        return BuildOnlyRunner(preset)
    if preset.runner == "llvm":
        from .llvm import LLVMRunner

        return LLVMRunner(preset)
    if preset.runner == "opencl-pyopencl":
        from .opencl import OpenCLRunner

        return OpenCLRunner(preset)
    if preset.runner == "cuda":
        from .cuda import CUDARunner

        return CUDARunner(preset)
    raise NotRunnableError(f"no runner {preset.runner!r} for {preset.name}")
