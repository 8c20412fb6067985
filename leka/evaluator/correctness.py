"""Correctness: compare a candidate's outputs with the reference, outside the worker.

atol is relative to the trial's reference scale (atol_scale * max|expected|), so one tolerance
serves tiny and large outputs alike; NaN where the reference is finite always fails (outputs are
pre-filled with NaN or garbage, so an unwritten element is caught); inputs must come back unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .result import Mismatch


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    max_abs_err: float = 0.0


def _scalar(x) -> float | int | None:
    v = x.item() if hasattr(x, "item") else x
    if isinstance(v, float) and not np.isfinite(v):
        return None if np.isnan(v) else v
    return v


def compare(name: str, got: np.ndarray, expected: np.ndarray, rtol: float, atol_scale: float,
            max_report: int = 5) -> Verdict:
    if got.shape != expected.shape:
        return Verdict(False, f"output {name} has shape {got.shape}, expected {expected.shape}")
    if expected.dtype.kind in "iub":
        bad = got != expected
        err = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        if rtol or atol_scale:  # integer tasks may allow an off-by-one rounding tolerance
            bad = err > atol_scale + rtol * np.abs(expected.astype(np.int64))
    else:
        g = got.astype(np.float64)
        e = expected.astype(np.float64)
        finite = np.isfinite(e)
        scale = float(np.max(np.abs(e[finite]))) if finite.any() else 1.0
        atol = atol_scale * scale
        with np.errstate(invalid="ignore"):
            err = np.abs(g - e)
            bad = ~(err <= atol + rtol * np.abs(e))
        # Non-finite expected values (inf from overflow, NaN by design) must be matched exactly.
        same_nonfinite = ~finite & ((np.isnan(e) & np.isnan(g)) | (g == e))
        bad &= ~same_nonfinite
    count = int(bad.sum())
    max_err = float(np.nanmax(np.where(np.isfinite(err), err, np.inf))) if err.size else 0.0
    if not count:
        return Verdict(True, max_abs_err=max_err)
    idx = np.argwhere(bad)[:max_report]
    mism = [Mismatch(name, [int(i) for i in ix], _scalar(got[tuple(ix)]), _scalar(expected[tuple(ix)]))
            for ix in idx]
    first = mism[0]
    return Verdict(False, f"output {name}: {count} of {got.size} elements differ (first at {first.index}: "
                          f"got {first.got}, expected {first.expected})", mism, count, max_err)


def inputs_unchanged(before: list[np.ndarray], after: list[np.ndarray], names: list[str]) -> str:
    """'' if every input came back bit-identical, else which one was modified."""
    for n, b, a in zip(names, before, after):
        if b.shape != a.shape or not np.array_equal(b, a, equal_nan=b.dtype.kind == "f"):
            return f"input {n} was modified by the candidate"
    return ""
