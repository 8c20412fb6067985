"""CUDA runner: TVM runtime on tvm.cuda() when an NVIDIA GPU is present here; otherwise NotRunnableError
(build here and run on a GPU box with leka.remote: see docs/cuda.md)."""
from __future__ import annotations

import importlib.util
import os

from leka.errors import NotRunnableError

from .tvm_device import TVMLoaded


class CUDARunner:
    name = "cuda"

    def __init__(self, preset):
        self.preset = preset

    def load(self, artifact) -> TVMLoaded:
        import tvm

        if artifact.family != "cuda":
            raise NotRunnableError(f"the cuda runner runs CUDA artifacts, not {artifact.family}")
        dev = tvm.cuda(0)
        if not self.preset.runnable or not dev.exist:
            raise NotRunnableError("no NVIDIA GPU on this machine: CUDA builds here but runs on a GPU box "
                                   "(leka.remote.make_job + python -m leka.remote.run_job; see docs/cuda.md)")
        # TVM compiles the CUDA source at load time with NVRTC, which needs the cuda-bindings package;
        # without it, use the nvcc on PATH instead (notes §3).
        if importlib.util.find_spec("cuda") is None:
            os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
        return TVMLoaded(artifact, dev)
