"""Timing protocol: warm-up, then rounds that alternate candidate and baseline (ABBA order) so a
drift in clock speed or machine load hits both sides alike; statistics are medians and IQRs.

Runs inside the worker; the objects timed have ``time(number) -> seconds per run``.
"""
from __future__ import annotations

import math
import time
from typing import Protocol, Sequence

import numpy as np


class Timeable(Protocol):
    def run(self) -> None: ...
    def time(self, number: int) -> float: ...


def _calibrate(x: Timeable, min_run_ms: float) -> int:
    """How many back-to-back runs make one round last at least min_run_ms."""
    one = x.time(1)
    return max(1, min(10_000, math.ceil(min_run_ms / 1e3 / max(one, 1e-7))))


def alternate(cand: Timeable, base: Timeable, *, warmup: int = 2, min_rounds: int = 7, max_rounds: int = 40,
              min_time_s: float = 0.08, min_run_ms: float = 2.0) -> tuple[list[float], list[float]]:
    for _ in range(warmup):
        cand.run()
        base.run()
    nc, nb = _calibrate(cand, min_run_ms), _calibrate(base, min_run_ms)
    c_times: list[float] = []
    b_times: list[float] = []
    spent_c = spent_b = 0.0
    t_end = time.perf_counter() + 30.0  # hard stop for very slow kernels; the parent also has a timeout
    r = 0
    while r < max_rounds:
        order = ((cand, nc, c_times), (base, nb, b_times))
        if r % 2:
            order = order[::-1]
        for x, n, out in order:
            out.append(x.time(n))
        spent_c += c_times[-1] * nc
        spent_b += b_times[-1] * nb
        r += 1
        if r >= min_rounds and spent_c >= min_time_s and spent_b >= min_time_s:
            break
        if time.perf_counter() > t_end and r >= 3:
            break
    return c_times, b_times


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Median, IQR/median (relative spread), CV and min of per-run times (seconds)."""
    a = np.asarray(samples, dtype=np.float64)
    med = float(np.median(a))
    q1, q3 = np.percentile(a, [25, 75])
    return {"median_s": med, "iqr_rel": float((q3 - q1) / med) if med > 0 else 0.0,
            "cv": float(a.std() / a.mean()) if a.mean() > 0 else 0.0, "min_s": float(a.min()), "n": int(a.size)}
