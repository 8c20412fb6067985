"""Non-degeneracy check for a task's definition, using only its NumPy reference (no TVM, fast).

A benchmark workload is useless if a trivial kernel passes it: an output that is (near) zero or
constant, or an input that the output ignores (a kernel could skip reading it). For each seed we
draw inputs, run the reference and check that
  * every output is finite and not within the task's tolerance of all-zeros,
  * every output varies (per-element std > 1e-3 * max|output|),
  * redrawing any one input changes at least one output beyond tolerance, and every output
    reacts to at least one input.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .task import Task

DISTS = ("normal", "heavy")
STD_FRACTION = 1e-3


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return bool(np.all(np.abs(a64 - b64) <= atol + rtol * np.abs(b64)))


def _atol(task: Task, ref: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) as the evaluator applies them: integer outputs take atol in LSBs, float outputs
    scale it by max|reference| (leka/evaluator/correctness.py)."""
    rtol, atol_scale = task.tolerance()
    if ref.dtype.kind in "iub":
        return rtol, atol_scale
    finite = ref[np.isfinite(ref)] if ref.size else ref
    return rtol, atol_scale * float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0


def _output_reasons(task: Task, refs: Sequence[np.ndarray], tag: str) -> list[str]:
    reasons: list[str] = []
    for spec, ref in zip(task.outputs, refs):
        r64 = ref.astype(np.float64)
        if not np.all(np.isfinite(r64)):
            reasons.append(f"output {spec.name} has non-finite values ({tag})")
            continue
        peak = float(np.max(np.abs(r64))) if r64.size else 0.0
        rtol, atol = _atol(task, ref)
        if peak == 0.0 or _close(np.zeros_like(r64), r64, rtol, atol):
            reasons.append(f"output {spec.name} is within tolerance of zero (max |{spec.name}| = {peak:.3g}, "
                           f"atol = {atol:.3g}) ({tag})")
            continue
        std = float(np.std(r64))
        if std <= STD_FRACTION * peak:
            reasons.append(f"output {spec.name} is near-constant (std {std:.3g} <= {STD_FRACTION:g} * "
                           f"max|{spec.name}| {peak:.3g}) ({tag})")
    return reasons


def check_nondegenerate(task: Task, seeds: Sequence[int] = (0, 1)) -> list[str]:
    """Return the reasons the task is degenerate (empty list = fine)."""
    reasons: list[str] = []
    n_in = len(task.inputs)
    for k, seed in enumerate(seeds):
        dist = DISTS[k % len(DISTS)]
        tag = f"seed {seed}, {dist} inputs"
        rng = np.random.default_rng(seed)
        inputs = task.generate_inputs(rng, dist)
        base = task.run_reference(inputs)
        found = _output_reasons(task, base, tag)
        reasons += found
        if found:
            continue
        reacts = [False] * len(base)
        for i in range(n_in):
            # Redraw input i only (a custom make_inputs may couple inputs, so take input i of a fresh draw).
            fresh = task.generate_inputs(np.random.default_rng(seed + 1000 + 7919 * (i + 1)), dist)
            if np.array_equal(fresh[i], inputs[i]):
                continue  # the input's domain is too small to redraw differently; nothing to learn
            trial = list(inputs)
            trial[i] = fresh[i]
            outs = task.run_reference(trial)
            changed = [not _close(o, b, *_atol(task, b)) for o, b in zip(outs, base)]
            reacts = [r or c for r, c in zip(reacts, changed)]
            if not any(changed):
                reasons.append(f"outputs do not depend on input {task.inputs[i].name} "
                               f"(redrawing it leaves every output within tolerance) ({tag})")
        for spec, r in zip(task.outputs, reacts):
            if not r and n_in:
                reasons.append(f"output {spec.name} reacts to no input ({tag})")
    return sorted(set(reasons), key=reasons.index)
