"""Correctness: compare a candidate's outputs with the reference, outside the worker.

A candidate must return exactly the task's outputs, each with the expected shape and dtype. For float
outputs atol is relative to the trial's reference scale (atol_scale * max|expected|), so one tolerance
serves tiny and large outputs alike; NaN where the reference is finite always fails (outputs are
pre-filled with NaN or garbage, so an unwritten element is caught). Integer outputs are exact, except
+-1 on the rounding ties a task declares (Task.int_tolerance = "ties"). Inputs must come back unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .result import Mismatch


@dataclass
class Verdict:
    ok: bool
    reason: str = ""  # with the first mismatch's index and values
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    max_abs_err: float = 0.0
    summary: str = ""  # the reason without any value (for held-back inputs)


def _scalar(x) -> float | int | None:
    v = x.item() if hasattr(x, "item") else x
    if isinstance(v, float) and not np.isfinite(v):
        return None if np.isnan(v) else v
    return v


def compare(name: str, got: np.ndarray, expected: np.ndarray, rtol: float, atol_scale: float,
            max_report: int = 5, ties: np.ndarray | None = None) -> Verdict:
    """Element-wise check of one output. Integer outputs ignore rtol/atol: exact, or off by one only
    where `ties` is True."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        why = (f"output {name} is {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}")
        return Verdict(False, why, summary=why)
    if expected.dtype.kind in "iub":
        err = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        bad = err != 0
        if ties is not None:
            bad &= ~(ties & (err == 1))
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
    summary = f"output {name}: {count} of {got.size} elements differ"
    return Verdict(False, f"{summary} (first at {first.index}: got {first.got}, expected {first.expected})",
                   mism, count, max_err, summary=summary)


def check_outputs(task: Any, outputs: Sequence[Any], refs: Sequence[np.ndarray],
                  ties: Sequence[np.ndarray | None], max_report: int = 5) -> Verdict:
    """All outputs of one run: exactly the task's outputs, each compared with its reference."""
    specs = task.outputs
    if len(outputs) != len(specs) or len(refs) != len(specs):
        why = f"the candidate returned {len(outputs)} output(s), the task has {len(specs)}"
        return Verdict(False, why, summary=why)
    worst = 0.0
    for spec, got, exp, tie in zip(specs, outputs, refs, ties, strict=True):
        if not isinstance(got, np.ndarray):
            why = f"output {spec.name} is not an array"
            return Verdict(False, why, summary=why)
        rtol, atol = task.tolerance(spec)
        v = compare(spec.name, got, exp, rtol, atol, max_report, tie)
        worst = max(worst, v.max_abs_err)
        if not v.ok:
            v.max_abs_err = worst
            return v
    return Verdict(True, max_abs_err=worst)


def inputs_unchanged(before: list[np.ndarray], after: list[np.ndarray], names: list[str]) -> str:
    """'' if every input came back bit-identical, else which one was modified."""
    if len(after) != len(before):
        return f"the candidate returned {len(after)} input(s), the task has {len(before)}"
    for n, b, a in zip(names, before, after, strict=True):
        if not isinstance(a, np.ndarray):
            return f"input {n} did not come back as an array"
        if b.shape != a.shape or not np.array_equal(b, a, equal_nan=b.dtype.kind == "f"):
            return f"input {n} was modified by the candidate"
    return ""


def check_timed_runs(task: Any, checks: Any, max_report: int = 5) -> tuple[str, Verdict | None]:
    """('', None) when every timed run the worker kept is correct, else (which run, its Verdict). Each kept run
    (picked at random after it ran, leka.runners.poison) carries the inputs it was given — a mix of the timing
    inputs no reference exists for yet — and its inputs and outputs as it left them: the reference is computed
    here from the task's trusted code."""
    if not isinstance(checks, list):
        return "timed runs", Verdict(False, "malformed timed-run checks", summary="malformed timed-run checks")
    names = [spec.name for spec in task.inputs]
    for check in checks:
        run = check.get("run") if isinstance(check, dict) else None
        if not isinstance(run, int) or isinstance(run, bool):
            return "timed runs", Verdict(False, "malformed timed-run check", summary="malformed timed-run check")
        where = f"timed run {run} (picked at random after it ran)"
        given = list(check.get("inputs") or [])
        bad = _bad_inputs(task, given)
        if bad:
            return where, Verdict(False, bad, summary=bad)
        changed = inputs_unchanged(given, list(check.get("inputs_after") or []), names)
        if changed:
            return where, Verdict(False, changed, summary=changed)
        refs = task.run_reference([a.copy() for a in given])
        outputs, ties = list(check.get("outputs") or []), task.tie_masks(given)
        v = check_outputs(task, outputs, refs, ties, max_report)
        if not v.ok and not _rounding_only(task, outputs, refs, ties, v):
            return where, v
    return "", None


# A timed-run check looks for work not done (poison left, another run's answer), not for rounding: the mixed
# inputs of timed runs can be worse conditioned than the trials' (particle_filter_weights: exp of a long sum,
# where a reassociated reduction is 3e-4-6e-4 off on 1-2 of 2048 elements against rtol 1e-4; its naive
# lowering, which sums in the reference's order, passes). Skipped work misses on nearly every element.
TIMED_RUN_SLACK = 10.0  # tolerance factor for the few float elements a timed run may miss by
TIMED_RUN_MAX_SHARE = 0.001  # ... at most this share of an output's elements (and at least 2 of them)


def _rounding_only(task: Any, outputs: list[Any], refs: Sequence[np.ndarray], ties: Sequence[np.ndarray | None],
                   strict: Verdict) -> bool:
    """True when a timed run's strict mismatches are a few float elements within TIMED_RUN_SLACK x tolerance."""
    if len(outputs) != len(task.outputs) or strict.mismatch_count <= 0:
        return False
    for spec, got, exp, tie in zip(task.outputs, outputs, refs, ties, strict=True):
        if not isinstance(got, np.ndarray):
            return False
        if exp.dtype.kind not in "fc":  # integers and booleans stay exact (off by one only at declared ties)
            if not compare(spec.name, got, exp, 0.0, 0.0, 1, tie).ok:
                return False
            continue
        rtol, atol = task.tolerance(spec)
        if not compare(spec.name, got, exp, rtol * TIMED_RUN_SLACK, atol * TIMED_RUN_SLACK, 1, tie).ok:
            return False
        if compare(spec.name, got, exp, rtol, atol, 1, tie).mismatch_count > max(2, TIMED_RUN_MAX_SHARE * exp.size):
            return False
    return True


def _bad_inputs(task: Any, given: list[Any]) -> str:
    """'' when `given` are arrays of exactly the task's input shapes and dtypes."""
    if len(given) != len(task.inputs):
        return f"{len(given)} input(s) reported, the task has {len(task.inputs)}"
    for spec, a in zip(task.inputs, given, strict=True):
        if not isinstance(a, np.ndarray) or a.shape != tuple(spec.shape) or a.dtype != np.dtype(spec.dtype):
            return f"input {spec.name} reported with another shape or dtype"
    return ""
