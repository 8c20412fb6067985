"""GPU (CUDA/OpenCL) fallback: per block, fuse the spatial loops, split by a thread count that divides
the extent, bind blockIdx.x / threadIdx.x; reduction loops stay inside each thread."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import inline_intermediates

NAME = "gpu.bind_spatial"


def _threads(extent: int, cap: int, prefer: int) -> int:
    for t in (prefer, 256, 128, 64, 512, 32, 1024, 16, 8, 4, 2):
        if t <= cap and t <= extent and extent % t == 0:
            return t
    return 1


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family not in ("cuda", "opencl"):
        return None
    cap = int(ctx.target.get("max_threads_per_block", 256))
    out = []
    for prefer in (256, 128, 64):
        def build(sk, prefer=prefer):
            done = set(inline_intermediates(sk, ctx.infos, inline_padding=True))
            for b in ctx.infos:
                if b.name in done:
                    continue
                loops = sk.loops(b.name)
                sp = [loops[i] for i in b.spatial]
                if [loops.index(s) for s in sp] != list(range(len(sp))):
                    sk.do("reorder", loops=sp + [loops[i] for i in b.reduce])
                fused = sk.do("fuse", loops=sp)[0] if len(sp) > 1 else sp[0]
                t = _threads(sk.extent(fused), cap, prefer)
                bx, tx = sk.do("split", loop=fused, factors=[None, t])
                sk.do("bind", loop=bx, thread="blockIdx.x")
                sk.do("bind", loop=tx, thread="threadIdx.x")
        ir = ctx.attempt(NAME, {"threads": prefer}, build)
        if ir is not None:
            out.append(ir)
    return out or None
