"""Backends, one per family (dlight style): each has applies(preset) and build(mod, preset) -> Artifact."""
from .cuda import CUDABackend
from .llvm import LLVMBackend
from .opencl import OpenCLBackend

BACKENDS = [LLVMBackend(), CUDABackend(), OpenCLBackend()]

__all__ = ["BACKENDS", "CUDABackend", "LLVMBackend", "OpenCLBackend"]
