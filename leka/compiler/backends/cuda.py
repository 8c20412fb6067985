"""CUDA backend: host CPU or Jetson boards (sm_53/sm_87); TVM stores CUDA C compiled at load time."""
from .gpu import GPUBackend


class CUDABackend(GPUBackend):
    family = "cuda"
    source_kind = "cuda"
