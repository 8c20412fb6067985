"""GPU GEMM-like reductions: a 2-D thread tile per output block, with the operand tiles of each reduce
step staged in shared memory (cache_read "shared" at the reduce-outer loop) and a local accumulator."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates

NAME = "gpu.shared_matmul"


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    mains = [b for b in ctx.infos if b.is_reduction and not b.is_ordered and len(b.spatial) == 2 and len(b.reduce) == 1
             and b.inner_contiguous and len(ctx.infos) == 1]
    if len(mains) != 1:
        return None
    m = mains[0]
    out = []
    for tile, tk in ((16, 16), (8, 8), (16, 8)):
        if any(m.extents[i] % tile for i in m.spatial) or m.extents[m.reduce[0]] % tk:
            continue

        def build(sk, tile=tile, tk=tk):
            inline_intermediates(sk, ctx.infos)
            i, j, k = sk.loops(m.name)
            i0, i1 = sk.do("split", loop=i, factors=[None, tile])
            j0, j1 = sk.do("split", loop=j, factors=[None, tile])
            k0, k1 = sk.do("split", loop=k, factors=[None, tk])
            sk.do("reorder", loops=[i0, j0, k0, k1, i1, j1])
            sk.do("bind", loop=i0, thread="blockIdx.y")
            sk.do("bind", loop=j0, thread="blockIdx.x")
            sk.do("bind", loop=i1, thread="threadIdx.y")
            sk.do("bind", loop=j1, thread="threadIdx.x")
            sk.mem_do("cache_write", block=m.name, buffer=0, scope="local", at=j1)
            for idx in (0, 1):
                blk = sk.mem_do("cache_read", block=m.name, buffer=idx, scope="shared", at=k0)[0]
                lps = sk.loops(blk)[3:]
                fused = sk.do("fuse", loops=lps)[0] if len(lps) > 1 else lps[0]
                ty_tx = sk.do("split", loop=fused, factors=[None, tile, tile])
                sk.do("bind", loop=ty_tx[1], thread="threadIdx.y")
                sk.do("bind", loop=ty_tx[2], thread="threadIdx.x")
            sk.do("decompose_reduction", block=m.name, loop=k0)
        ir = ctx.attempt(NAME, {"tile": tile, "tk": tk}, build)
        if ir is not None:
            out.append(ir)
    return out or None
