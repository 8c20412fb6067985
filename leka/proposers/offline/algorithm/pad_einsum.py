"""Pad to the vector width: a GEMM-like reduction whose innermost output extent has no divisor near the
vector width (257 DFT bins of a 512-point STFT) cannot be tiled or vectorised without a remainder. Pad
that iteration space up to a multiple of PAD (s_tir's pad_einsum: operands padded with zeros into new
buffers, the product computed on the padded space, the valid part copied out), after which the GEMM
rules tile it. Costs (padded - original) / original extra work."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from .common import as_candidate, fresh_schedule

NAME = "alg.pad_einsum"
PAD = 16
MAX_WASTE = 0.25  # skip when padding adds more than this share of work


def _needs_pad(extent: int) -> bool:
    return extent >= PAD and extent % PAD != 0 and extent % 8 != 0


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    picks = [b for b in ctx.infos if b.is_reduction and b.reuse and not b.is_ordered and b.spatial
             and len(b.loops) == len(b.kinds) and _needs_pad(b.extents[b.spatial[-1]])]
    picks = [b for b in picks
             if (-b.extents[b.spatial[-1]] % PAD) / b.extents[b.spatial[-1]] <= MAX_WASTE]
    if not picks:
        return None
    sch = fresh_schedule(ctx)
    for b in picks:
        padding = [PAD if i == b.spatial[-1] else 1 for i in range(len(b.kinds))]
        try:
            sch.pad_einsum(sch.get_sblock(b.name), padding)
        except Exception:  # noqa: BLE001 - TVM refuses (body not a plain einsum): not mine
            return None
    names = [b.name for b in picks]
    return [as_candidate(ctx, sch.mod["main"], NAME, {"blocks": names, "pad": PAD},
                         f"pad to {PAD}: {', '.join(names)} computed on a zero-padded iteration space")]
