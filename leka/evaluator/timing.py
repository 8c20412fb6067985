"""Timing protocol: warm-up, then rounds that alternate candidate and baseline (ABBA order) so a
drift in clock speed or machine load hits both sides alike; statistics are medians and IQRs.

``alternate`` runs inside the worker on the runners' ``time(number)``: for TVM kernels that is TVM's
``time_evaluator`` (a C++ loop, one timed call per repeat) with, once armed, a compiled preproc of ours
before every call that poisons the outputs and gives the kernel fresh inputs (leka.runners.poison), so
nothing but the kernel is timed and no run can reuse an earlier answer.
``plausible`` runs in the parent: the work a timing reply reports must fit the wall time it took.
"""
from __future__ import annotations

import math
import time
from typing import Any, Protocol, Sequence

import numpy as np

from .cpu_time import Usage
from .floor import RunFloor


class Timeable(Protocol):
    def run(self) -> None: ...
    def time(self, number: int) -> float: ...


MAX_RUNS = 10_000  # runs per round at most


def _runs_for(per_run_s: float, min_run_ms: float) -> int:
    return max(1, min(MAX_RUNS, math.ceil(min_run_ms / 1e3 / max(per_run_s, 1e-7))))


def _wall_per_run(x: Timeable, n: int) -> float:
    t0 = time.perf_counter()
    x.time(n)
    return (time.perf_counter() - t0) / n


def _calibrate(x: Timeable, min_run_ms: float) -> int:
    """How many runs make one round last about min_run_ms of wall time — the runs and the untimed preproc
    before each, which for µs kernels costs more than the run — so the number of rounds, and with it the
    median's robustness to a preempted round, does not depend on the kernel's size. The best of three measurements at one run (one when that run alone lasts 5 rounds: a default
    build of a large layer takes 0.1-1 s a call), then the best of two at that estimate."""
    first = _wall_per_run(x, 1)
    per_run = first if first * 1e3 >= 5 * min_run_ms else min([first] + [_wall_per_run(x, 1) for _ in range(2)])
    n = _runs_for(per_run, min_run_ms)
    if n > 1:
        per_run = min(_wall_per_run(x, n) for _ in range(2))
        n = _runs_for(per_run, min_run_ms)
    return n


def _balanced(n: int, per_run_s: float, other_round_s: float, min_rounds: int, min_time_s: float) -> int:
    """Runs per round for a side whose rounds are shorter than the other side's: enough to last as long as the
    other's round, up to min_time_s / min_rounds (the rounds then stop at min_rounds). Rounds of ~1 ms of a
    0.7 ms candidate against a 59 ms default build took 40 rounds to give the candidate its min_time_s, and the
    default build ran 40 times along (5.7 s of an 11 s evaluation)."""
    target = min(other_round_s, min_time_s / min_rounds)
    return n if n * per_run_s >= target else max(n, min(MAX_RUNS, math.ceil(target / max(per_run_s, 1e-9))))


def alternate(cand: Timeable, base: Timeable, *, warmup: int = 2,
              min_rounds: int = 7, max_rounds: int = 40, min_time_s: float = 0.08,
              min_run_ms: float = 2.0, candidate_n: int | None = None,
              baseline_n: int | None = None) -> dict[str, Any]:
    """Per-round seconds per run of each side ("candidate_s", "baseline_s") and the runs per round
    ("candidate_n", "baseline_n"). Rounds go on until both sides have run min_time_s (and min_rounds).
    `candidate_n`, `baseline_n`: runs per round chosen by the parent (leka.evaluator.calibrate), kept as given;
    without them (a remote board, whose requests the parent cannot clock) the rounds are sized here."""
    for _ in range(warmup):
        cand.run()
        base.run()
    if candidate_n is not None and baseline_n is not None:
        nc, nb, given = int(candidate_n), int(baseline_n), True
    else:
        nc, nb, given = _calibrate(cand, min_run_ms), _calibrate(base, min_run_ms), False
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
        if r == 1 and not given:  # unbalanced sides: the shorter rounds lengthened (the first round's runs say by how much)
            nc, nb = (_balanced(nc, c_times[0], b_times[0] * nb, min_rounds, min_time_s),
                      _balanced(nb, b_times[0], c_times[0] * nc, min_rounds, min_time_s))
        if r >= min_rounds and spent_c >= min_time_s and spent_b >= min_time_s:
            break
        if time.perf_counter() > t_end and r >= 3:
            break
    return {"candidate_s": c_times, "baseline_s": b_times, "candidate_n": nc, "baseline_n": nb}


# A timing request also spends time the reply does not report: the untimed calls (warm-up,
# calibration, one discarded call per round), the poison refills, uploads, downloads and transfer.
WALL_FIXED_S = 1.0  # fixed part, generous (a loaded machine, a first call that pays lazy set-up)
WALL_PER_CALL_S = 50e-6  # per reported run: refill + timer + call overhead, measured ~2 µs on host-cpu
MIN_ACCOUNTED = 0.03  # reported runs (timed and untimed): at least this share of the rest of the wall time
MAX_OVER = 1.05  # and never more than the wall time itself (plus a little clock skew)
MIN_ROUND_SHARE = 0.01  # a round's reported runs vs min_run_ms of wall that calibration aimed it at
# ... divided by the slowdown the worker's threads suffered waiting for a core (kernel accounting), up to this:
# under load a calibration run is delayed too and the rounds come out short (at load 9-12, rounds of 3 runs of
# 8.7 µs: 1/77 of the 2 ms aimed at), while a 1000x-shortened reply stays far below even 1/400
MAX_SLOWDOWN = 4.0
# ... checked only for rounds of few runs, where the kernel and not the untimed preproc fills the wall time
# (for a 20 ns kernel the preproc takes ~99 % of a round)
SHORT_ROUND_MAX_RUNS = 64
# Every timed run costs at least a time_evaluator iteration and the preproc call before it: ~7-10 µs per run
# next to the dwconv3x3 example, but only ~0.7 µs all told for a 64-element add (preproc of 64 elements), so
# 1 µs failed honest tiny kernels. 0.1 µs stays below any real iteration while a reply claiming 1000x more,
# shorter runs is still caught (and MAX_RUNS bounds the runs per round in any case).
PER_CALL_FLOOR_S = 1e-7
# A reported run vs the wall time per run this side clocked when it sized the rounds (leka.evaluator.calibrate),
# which also holds the untimed preproc before each run and the timer's loop: honest replies 0.14-0.92 of it over
# 30 tasks (0.14: a 0.8 µs int8 clamp whose preproc mixes 75k elements); a 1000x shortened run ~0.0005.
MIN_CLOCKED_SHARE = 1 / 100


def reported_work(reply: dict[str, Any], warmup: int = 2) -> tuple[float, float, int]:
    """(seconds of timed runs the reply claims, those plus the untimed runs the protocol also made — warm-up,
    calibration, time_evaluator's first call per round, the final checked run — at the reported median,
    number of timed runs)."""
    timed = busy = 0.0
    calls = 0
    for side in ("candidate", "baseline"):
        n = int(reply.get(f"{side}_n") or 0)
        times = [float(t) for t in reply.get(f"{side}_s") or []]
        if not times:
            continue
        med = float(np.median(times))
        untimed = len(times) + warmup + 6 + 2 * (n + 1) + (2 if side == "candidate" else 0)
        timed += sum(times) * n
        busy += sum(times) * n + med * untimed
        calls += n * len(times)
    return timed, busy, calls


def plausible(reply: dict[str, Any], wall_s: float | None, min_run_ms: float | None = None, *,
              floor: RunFloor | None = None, usage: Usage | None = None,
              asked: Sequence[Any] | None = None, warmup: int = 2) -> str | None:
    """None when the reported per-run times × runs fit the parent's wall clock of the request, else why not.
    Catches a worker that reports faster (or slower) runs than it spent time on, rounds far shorter than the
    calibration (which sizes each round to about min_run_ms) would have made them, and (given the task's
    `floor`, leka.evaluator.floor) runs shorter than writing the outputs can take. `usage`: what the worker's
    processes used over the request (leka.evaluator.cpu_time): the reported work must fill a share of its CPU
    seconds, which a loaded machine does not inflate as it does the wall clock, and its wait for a core
    loosens the short-round check. `asked`: the (candidate, baseline) rounds this side sized
    (leka.evaluator.calibrate.SideRounds): the reply must have run exactly those, at per-run times that are
    not far below the wall time per run this side clocked while sizing them. `warmup`: the untimed runs of each
    side the request asked before its rounds."""
    if wall_s is None:
        return None
    try:
        return _not_as_asked(reply, asked) or _implausible(reply, wall_s, min_run_ms, floor, usage, warmup)
    except (TypeError, ValueError, AttributeError):
        return "timing reply inconsistent with wall clock: malformed per-run times"


def _not_as_asked(reply: dict[str, Any], asked: Sequence[Any] | None) -> str | None:
    for side, rounds in zip(("candidate", "baseline"), asked or ()):
        n, times = int(reply.get(f"{side}_n") or 0), [float(t) for t in reply.get(f"{side}_s") or []]
        if n != rounds.n:
            return f"timing reply inconsistent with the rounds asked: {side} rounds of {n} runs, {rounds.n} asked"
        if times and float(np.median(times)) < MIN_CLOCKED_SHARE * rounds.per_run_s:
            return (f"timing reply inconsistent with wall clock: {side} runs of {float(np.median(times)) * 1e6:.3g} "
                    f"µs reported, {rounds.per_run_s * 1e6:.3g} µs each on this side's clock")
    return None


def _below_floor(reply: dict[str, Any], floor: RunFloor) -> str | None:
    for side in ("candidate", "baseline"):
        times = reply.get(f"{side}_s") or []
        if times and float(np.median(times)) < floor.seconds:
            return (f"timing reply below the task's floor: {side} runs of {float(np.median(times)) * 1e9:.3g} ns "
                    f"reported; {floor.describe()}")
    return None


def _implausible(reply: dict[str, Any], wall_s: float, min_run_ms: float | None, floor: RunFloor | None,
                 usage: Usage | None, warmup: int = 2) -> str | None:
    share = MIN_ROUND_SHARE / min(MAX_SLOWDOWN, usage.slowdown if usage is not None else 1.0)
    for side in ("candidate", "baseline"):
        n, times = int(reply.get(f"{side}_n") or 0), reply.get(f"{side}_s") or []
        if n > MAX_RUNS:
            return (f"timing reply inconsistent with the protocol: {side} rounds of {n} runs, "
                    f"calibration makes at most {MAX_RUNS}")
        short = float(np.median(times)) * n < share * min_run_ms / 1e3 if times and min_run_ms else False
        if n <= SHORT_ROUND_MAX_RUNS and short:
            return (f"timing reply inconsistent with wall clock: {side} rounds of {n} runs reported "
                    f"{float(np.median(times)) * n * 1e3:.3f} ms, calibrated for {min_run_ms:g} ms")
    work, busy, calls = reported_work(reply, warmup)
    if calls <= 0 or not math.isfinite(work) or work <= 0:
        return "timing reply inconsistent with wall clock: no runs reported"
    if floor is not None and (low := _below_floor(reply, floor)):
        return low
    if work > wall_s * MAX_OVER + 1e-3:
        return (f"timing reply inconsistent with wall clock: {work:.3f} s of runs reported in "
                f"{wall_s:.3f} s")
    if work + calls * PER_CALL_FLOOR_S > wall_s * MAX_OVER + 1e-3:
        return (f"timing reply inconsistent with wall clock: {calls} runs reported in {wall_s:.3f} s, "
                f"each costs at least {PER_CALL_FLOOR_S * 1e6:g} µs besides the kernel")
    # Time the worker ran, not time it waited for a core: under load (other work on the same cores) the wall
    # clock of the request grows many-fold while the work does not (load 9-12 here: 0.1 s reported in 3 s).
    spent = wall_s if usage is None or usage.cpu_s < 0 else min(wall_s, usage.cpu_s)
    unexplained = spent - WALL_FIXED_S - calls * WALL_PER_CALL_S
    if unexplained > 0 and busy < MIN_ACCOUNTED * unexplained:
        cpu = f" ({usage.cpu_s:.3f} s of CPU)" if usage is not None else ""
        return (f"timing reply inconsistent with wall clock: {busy:.3f} s of runs reported, "
                f"{wall_s:.3f} s spent{cpu}")
    return None


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, IQR/median (relative spread), CV and min of per-run times (seconds)."""
    a = np.asarray(samples, dtype=np.float64)
    med = float(np.median(a))
    q1, q3 = np.percentile(a, [25, 75])
    return {"median_s": med, "iqr_rel": float((q3 - q1) / med) if med > 0 else 0.0,
            "cv": float(a.std() / a.mean()) if a.mean() > 0 else 0.0, "min_s": float(a.min()), "n": int(a.size)}
