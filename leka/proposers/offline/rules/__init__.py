"""Offline rules, one per module (dlight style): ``apply(ctx) -> list[CandidateIR] | None``
(None = "not mine"). Composed per target family in order of preference."""
from __future__ import annotations

from . import (cpu_conv_channel_pack, cpu_conv_im2col, cpu_conv_register_tile, cpu_depthwise_conv, cpu_int8_dot,
               cpu_matmul_epilogue, cpu_multi_gemm, cpu_pack_transposed, cpu_parallel_vectorize,
               cpu_partition_borders, cpu_pointwise_conv, cpu_pointwise_dot, cpu_rfactor_dot, cpu_row_fusion, cpu_scan_unroll,
               cpu_short_reduction, cpu_tile_reduction,
               gpu_bind_spatial, gpu_cross_thread_reduction, gpu_fused_rows, gpu_shared_matmul,
               gpu_tensor_core_matmul, gpu_vector_elementwise)

# int8 dot products first: the rule takes only int8 GEMM-like reductions on x86 targets with AVX-512 VNNI
CPU_RULES = [cpu_int8_dot, cpu_multi_gemm, cpu_pointwise_conv, cpu_pointwise_dot, cpu_conv_im2col, cpu_conv_channel_pack,
             cpu_conv_register_tile, cpu_depthwise_conv, cpu_matmul_epilogue, cpu_tile_reduction, cpu_pack_transposed,
             cpu_partition_borders, cpu_rfactor_dot, cpu_row_fusion, cpu_short_reduction, cpu_parallel_vectorize,
             cpu_scan_unroll]
# tensor cores first: the rule takes only fp16 GEMMs on sm_70+, where they beat the CUDA-core schedules
GPU_RULES = [gpu_tensor_core_matmul, gpu_fused_rows, gpu_shared_matmul, gpu_cross_thread_reduction,
             gpu_vector_elementwise, gpu_bind_spatial]
RULES = {"cpu": CPU_RULES, "cuda": GPU_RULES, "opencl": GPU_RULES}
