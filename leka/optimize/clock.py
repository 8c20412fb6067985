"""`--budget minutes` bounds the whole optimisation run: import, profiling, tuning, the build, verification
and the latency comparison, not the tuning alone (a 100,000-node model at minutes=0.1 ran 13.4 minutes).

The stages before tuning run under a timer (SIGALRM in the main thread: a TVM call in progress finishes
first); tuning gets what is left less a reserve for the build; the build runs in a child process killed at
the deadline. A run that cannot fit says so in one line and stops; nothing is written.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from leka.errors import ExitCode

from . import OptimizeError


class MinutesExceeded(OptimizeError):
    """The whole run does not fit --budget minutes: nothing written; exit 4 (the budget ran out first), and
    the kernels already decided stay in the tuning db for a run with more minutes."""

    exit_code = ExitCode.BUDGET

# The build job imports the model again and compiles it: the optimised build (scheduled kernels compile slower
# than the default lowering: counted twice), and the tvm-naive and tvm-dlight builds when timed. Each compile takes
# about what the profile's compiles of every distinct kernel took (inception_v1: 9.8 s of kernel compiles, 6.3-6.7 s
# a whole default build; import 14.9 s), at least this much each.
MIN_COMPILE_S = 7.5
# Searches end a step or a measurement in progress past their minutes (seen: 0.64 min on a 4-minute run at load
# 10): tuning also leaves this fraction of its own minutes for that, so the build keeps its reserve.
OVERRUN_FRACTION = 0.1


def load_factor() -> float:
    """How much slower than on an idle host compiles run now: the load average over the cores, 1 to 3."""
    import os

    try:
        return min(3.0, max(1.0, os.getloadavg()[0] / max(1, os.cpu_count() or 1)))
    except OSError:
        return 1.0


class WholeRun:
    """The run's clock against its minutes limit (None: unbounded)."""

    def __init__(self, minutes: float | None, clock=time.monotonic) -> None:
        self.minutes, self._clock = minutes, clock
        self.t0 = clock()
        self.deadline = None if minutes is None else self.t0 + minutes * 60

    def elapsed(self) -> float:
        return self._clock() - self.t0

    def left_s(self) -> float | None:
        return None if self.deadline is None else self.deadline - self._clock()

    def over(self, stage: str) -> MinutesExceeded:
        assert self.minutes is not None  # only a bounded clock runs over
        return MinutesExceeded(f"--budget minutes={self.minutes:g} does not fit this model: {stage} reached "
                             f"{self.elapsed():.1f} s of the whole run's {self.minutes * 60:.0f} s (import, "
                             "profiling, tuning and the build all count); nothing written, raise minutes")

    def check(self, stage: str) -> None:
        left = self.left_s()
        if left is not None and left <= 0:
            raise self.over(stage)

    @contextmanager
    def bounded(self, stage: str) -> Iterator[None]:
        """Run a stage in this process under the deadline (a timer where signals can be used: main thread)."""
        left = self.left_s()
        use_timer = left is not None and threading.current_thread() is threading.main_thread()
        if use_timer and left is not None:
            if left <= 0:
                raise self.over(stage)

            def expire(signum: int, frame: object) -> None:
                raise self.over(stage)

            old = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        except Exception:
            left = self.left_s()
            if left is not None and left <= 0:  # the timer's error, maybe wrapped by TVM or the importer
                raise self.over(stage) from None
            raise
        finally:
            if use_timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
        self.check(stage)

    def tuning_minutes(self, import_s: float, compile_s: float, timed: bool, time_s: float,
                       default_s: float = 0.0) -> float | None:
        """Minutes left for tuning: what remains less the build's reserve (see MIN_COMPILE_S), estimated from
        `import_s` (the model's import) and `compile_s` (the profile's compiles of every kernel), and, when timed,
        from `default_s`, one call of the default build (the profile's sum): every round of the comparison makes
        batches_per_round batches of each build, and the default and dlight builds of an unscheduled CNN take
        seconds a call (inception_v1: 2.4 s; e2e_timing.timing_reserve_s). Before, the reserve was 3 x (import
        + profiling): inception_v1's run ended 2.2 of its 10 minutes early. Refuses a run whose build cannot fit."""
        from .e2e_timing import timing_reserve_s

        left = self.left_s()
        if left is None or self.minutes is None:  # both None together: an unbounded clock
            return None
        timing = timing_reserve_s(default_s, time_s)
        builds = (4 if timed else 2) * max(MIN_COMPILE_S, compile_s)
        reserve = (import_s + builds) * load_factor() + (timing if timed else 0.0)
        if left <= reserve:
            raise MinutesExceeded(f"--budget minutes={self.minutes:g} does not fit this model: import and profiling "
                                f"took {self.elapsed():.1f} s, and the build needs about {reserve:.0f} s more, past the "
                                f"whole run's {self.minutes * 60:.0f} s; nothing written, raise minutes")
        return (left - reserve) * (1 - OVERRUN_FRACTION) / 60
