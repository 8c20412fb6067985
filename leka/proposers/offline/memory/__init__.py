"""Offline memory-layer rules, one per module (dlight style): ``apply(ctx) -> list[CandidateIR] | None``.

Unlike the schedule rules, which build a whole schedule from the task's loops (their memory decisions
included), these add memory decisions on top of the request's current IR — its schedule kept — so
the memory layer refines what the schedule layer chose."""
from __future__ import annotations

from . import cpu_tile_operands

MEMORY_RULES = {"cpu": [cpu_tile_operands]}
