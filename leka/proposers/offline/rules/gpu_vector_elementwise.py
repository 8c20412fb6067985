"""GPU elementwise/epilogue kernels: intermediates fused into the output block (compute_inline), then
each thread handles 16 bytes of adjacent outputs as one vector (float4 / half8): coalesced, vectorised
loads and stores. Declines when no spatial-only block's extent takes the vector width, or when a long
reduction carries the work (gpu.cross_thread_reduction's, gpu.shared_matmul's)."""
from __future__ import annotations

import numpy as np

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates
from .gpu_bind_spatial import bind_flat, max_threads

NAME = "gpu.vector_elementwise"
LONG_REDUCTION = 16  # terms per output beyond which the reduction, not the epilogue, is the kernel


# An index vector wider than 4 x int32 breaks TVM 0.27's CUDA codegen: int32x8 is stored as longlong4 and a
# broadcast of it prints make_longlong4 with 8 arguments, which nvcc rejects. Index vectors appear when the
# vector does not stay inside one row (innermost extent not a multiple of the lanes: j = (8f + v) % 3).
SAFE_GATHER_LANES = 4


def _lanes(ctx: RuleContext, spatial: list) -> int:
    itemsize = min(np.dtype(a.dtype).itemsize for a in ctx.task.args)
    lanes = max(1, 16 // itemsize)
    if lanes > SAFE_GATHER_LANES and any(b.extents[b.spatial[-1]] % lanes for b in spatial):
        return SAFE_GATHER_LANES
    return lanes


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    spatial = [b for b in ctx.infos if not b.reduce and not b.is_ordered]
    lanes = _lanes(ctx, spatial)
    if any(b.reduce and np.prod([b.extents[i] for i in b.reduce]) > LONG_REDUCTION for b in ctx.infos):
        return None
    if lanes < 2 or not spatial or not any(np.prod([b.extents[i] for i in b.spatial]) % lanes == 0
                                           for b in spatial):
        return None
    out = []
    for prefer, vec in ((256, lanes), (128, lanes), (256, lanes // 2)):
        def build(sk, prefer=prefer, vec=vec):
            done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
            for b in ctx.infos:
                if b.name not in done:
                    bind_flat(sk, b, max_threads(ctx), prefer, vec=vec if not b.reduce else 1)
        ir = ctx.attempt(NAME, {"threads": prefer, "vec": vec}, build)
        if ir is not None:
            out.append(ir)
    return out or None
