"""The floor of a GPU run: the kernel shipped when the search beats nothing.

On CPU the initial IR is the naive lowering, a kernel as it stands, and the run's baseline. On a GPU target
the initial IR is no kernel (its blocks are unbound), so a run used to accept its first correct candidate
however slow, and ship it. There the run is measured against dlight's schedule instead (the kernel a model
build uses), and that schedule is the starting candidate: its speedup is 1 by definition, a proposal must
beat it to be accepted, and finalize falls back on it (re-measured like any finalist) when nothing else
confirms (without a measurement of it against itself). Where dlight has no rule the baseline is the naive
binding, which is then the floor.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

FLOOR_BASELINE = "tvm-dlight"
FLOOR_SUMMARY = "the baseline's kernel (dlight's schedule): the floor"
# At or under this many ms a GPU kernel is launch-bound (a launch costs ~3.5 us on the H200; 14 of 26
# held-out tasks sat within 5 % of dlight at 4-6 us): a remote run there stops once a round beat nothing.
LAUNCH_FLOOR_MS = 0.010


def default_baseline(target: Any) -> str:
    """What a run is measured against unless told otherwise: dlight on a GPU, the naive lowering on CPU."""
    return "tvm-naive" if getattr(target, "family", "cpu") == "cpu" else FLOOR_BASELINE


def floor_fn(task: Any, target: Any, baseline: str | None) -> Callable[[], str] | None:
    """The floor's TVMScript, made on first use (dlight takes seconds on some tasks; a resumed run that
    never reaches finalize does not pay it); None where the run has no floor (CPU, or another baseline)."""
    if getattr(target, "family", "cpu") == "cpu" or baseline != FLOOR_BASELINE:
        return None

    @lru_cache(maxsize=1)
    def source() -> str:
        from leka.compiler import baseline_module

        return baseline_module(task.build(), target, baseline)[1].script()

    return source


def floor_result(candidate_hash: str) -> dict[str, Any]:
    """The floor's final record: the baseline's own kernel, 1x by definition, correct as the default build
    that ships without LEKA is; not measured against itself (on a remote GPU that would cost a round)."""
    return {"compiled": True, "correct": True, "failure": None, "error": None, "speedup": 1.0,
            "baseline": FLOOR_BASELINE, "candidate_ms": None, "baseline_ms": None, "candidate_hash": candidate_hash,
            "note": "the floor: the baseline's own kernel, not measured against itself"}
