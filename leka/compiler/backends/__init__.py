"""Backends, one per family (dlight style): each has applies(preset) and build(mod, preset) -> Artifact."""
from .base import Backend
from .cuda import CUDABackend
from .llvm import LLVMBackend
from .opencl import OpenCLBackend

BACKENDS: list[Backend] = [LLVMBackend(), CUDABackend(), OpenCLBackend()]

__all__ = ["BACKENDS", "Backend", "CUDABackend", "LLVMBackend", "OpenCLBackend"]
