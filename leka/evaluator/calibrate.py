"""Parent-side sizing of the timing rounds (docs/evaluator.md, "Timing").

The runs per round of each side are chosen here, from requests this side clocks itself, and sent to the
worker, which runs them as asked. While the worker chose them, a compromised worker could report 1000x more
runs of a 1000x shorter time (the same total work) and nothing the parent measured told the two apart: a
calibration hiccup that gave an honest dwconv rounds of a few runs let such a reply through at 201x (CI,
2026-12-06). The wall time per run measured here, the run with its untimed preproc, is also the yardstick the
reply's per-run times are held to (timing.plausible): a worker that divides its times by 1000 reports runs far
shorter than this side saw them take.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .cpu_time import Usage
from .timing import _balanced, _runs_for

# Runs `n` timed runs of one side in the worker (arming it first when asked) and returns this side's wall
# seconds for the request, or None when the request failed (the failure is recorded by the caller).
Clock = Callable[[int, bool], "float | None"]

OVERHEAD_SAMPLES = 3  # requests of no runs: what a request costs besides the runs
LONG_RUN_ROUNDS = 5  # one run lasting this many rounds is measured once (a default build of a large layer)
# A set-up request (the timer's untimed first call and one run) this long is the measurement: light_vgg19's default
# builds take ~2 s a run, and every further one-run request costs two. Far above any lazy set-up, which would
# otherwise pass a µs kernel off as a long one (rounds of one run, then refused as implausibly short)
LONG_SETUP_S = 1.0
MAX_STEPS = 6  # re-estimates of the runs per round, each at the previous estimate
# Each re-estimate asks at most this many times the runs of the last: a one-run request no longer than the
# overhead requests (noise) estimated the run at ~0 s and asked 10,000 runs of a 0.3-0.7 ms kernel twice, 3.5-7.5 s
# each (light_densenet121's 1x1 convolutions, a third of the quick pass's kernels)
MAX_GROWTH = 16


@dataclass(frozen=True)
class SideRounds:
    n: int  # runs per round asked of the worker
    per_run_s: float  # wall seconds per run this side measured: the run, its preproc and the timer's loop


def time_running(wall_s: float, before: Usage | None, after: Usage | None, own_wait_s: float) -> float:
    """A request's wall clock less the time a core was not free to run it: the longest wait of any one worker
    thread and this side's own wait (both the kernel's accounting). On a loaded machine a request of a few µs of
    runs can sit a whole time slice on the run queue; left in, that wait made an honest dwconv's runs look 125x
    shorter than the clock said (2.91 µs reported, 366 µs clocked; CI, 2026-12-07 with busy loops on every
    core). The wait is not a worker's to lower, so an honest reply loses nothing a lying one could use."""
    waited = (after - before).longest_wait_s if before is not None and after is not None else 0.0
    return max(wall_s - max(waited, 0.0) - max(own_wait_s, 0.0), 0.0)


def _best(clock: Clock, n: int, times: int) -> float | None:
    seen = []
    for _ in range(times):
        t = clock(n, False)
        if t is None:
            return None
        seen.append(t)
    return min(seen)


def calibrate_side(clock: Clock, min_run_ms: float) -> SideRounds | None:
    """Runs per round that make a round last about min_run_ms on this side's clock: the best of a few requests
    at one run, then at each estimate until it holds (a request's own overhead, ~0.1-0.5 ms, subtracted)."""
    setup = clock(1, False) if clock(0, True) is not None else None  # arm, then one run that pays lazy set-up
    overhead = _best(clock, 0, OVERHEAD_SAMPLES) if setup is not None else None
    if setup is None or overhead is None:
        return None
    if setup - overhead >= max(2 * LONG_RUN_ROUNDS * min_run_ms / 1e3, LONG_SETUP_S):
        return SideRounds(1, setup - overhead)
    first = _best(clock, 1, 1)
    if first is None:
        return None
    long_run = first - overhead >= LONG_RUN_ROUNDS * min_run_ms / 1e3
    wall = first if long_run else _best(clock, 1, 2)
    if wall is None:
        return None
    n, per_run = 1, max(min(wall, first) - overhead, 1e-9)
    for _ in range(MAX_STEPS):
        want = min(_runs_for(per_run, min_run_ms), MAX_GROWTH * n)
        if want <= n:
            break
        n = want
        wall = _best(clock, n, 2)
        if wall is None:
            return None
        per_run = max(wall - overhead, 1e-9) / n
        if n * per_run >= 0.5 * min_run_ms / 1e3:  # close enough: the last estimate sizes the rounds
            break
    return SideRounds(_runs_for(per_run, min_run_ms), per_run)


def slow_pair(sides: tuple[SideRounds, SideRounds], slow_run_s: float) -> bool:
    """A side's runs take slow_run_s or more (EvalConfig.slow_run_s): the pair is timed over fewer rounds."""
    return max(side.per_run_s for side in sides) >= slow_run_s


def size_rounds(cand: Clock, base: Clock, *, min_run_ms: float, min_rounds: int, min_time_s: float,
                slow_run_s: float = math.inf, slow_min_rounds: int = 1) -> tuple[SideRounds, SideRounds] | None:
    """Both sides calibrated, then the side with the shorter rounds lengthened to last about as long as the
    other's (timing._balanced), so that a fast candidate reaches its min_time_s in as few rounds as its
    baseline: slow_min_rounds of them for a slow pair (slow_pair)."""
    c = calibrate_side(cand, min_run_ms)
    b = calibrate_side(base, min_run_ms) if c is not None else None
    if c is None or b is None:
        return None
    rounds = slow_min_rounds if slow_pair((c, b), slow_run_s) else min_rounds
    nc = _balanced(c.n, c.per_run_s, b.n * b.per_run_s, rounds, min_time_s)
    nb = _balanced(b.n, b.per_run_s, c.n * c.per_run_s, rounds, min_time_s)
    return SideRounds(nc, c.per_run_s), SideRounds(nb, b.per_run_s)
