"""Offline algorithm-layer rewrites, one per module (dlight style): ``apply(ctx) -> list[CandidateIR] | None``.

Each rewrite starts from the request's current algorithm (the task's PrimFunc or an earlier rewrite),
transforms it with s_tir.Schedule primitives (plus, for scans, one block-signature edit) and stores the
printed result as a trusted algorithm layer. Block names stay TVM's, so the schedule and memory rules
apply on top of the rewritten function unchanged."""
from __future__ import annotations

from . import fast_math, fuse_elementwise, pad_einsum, precompute_tables, scan_lanes, separable_window, split_k

ALGORITHM_RULES = [fast_math, scan_lanes, separable_window, precompute_tables, pad_einsum, split_k, fuse_elementwise]
