"""OpenCL backend: PoCL here, Mali/Adreno boards; the OpenCL C is run through pyopencl (no TVM OpenCL runtime)."""
from .gpu import GPUBackend


class OpenCLBackend(GPUBackend):
    family = "opencl"
    source_kind = "opencl"
