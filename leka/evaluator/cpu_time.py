"""What the sandboxed worker's processes used, read by the parent from the kernel's accounting (/proc), which
the worker cannot alter: CPU seconds, and seconds its threads sat runnable waiting for a core. Unlike the
parent's wall clock, CPU time does not grow while the worker waits on a loaded machine, so it is what the
timing plausibility check compares the reported work with; the wait says how loaded the machine was."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Iterable

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    cpu_s: float  # user + system, every thread, and the children it has reaped
    wait_s: float  # runnable but not running (schedstat run_delay), live threads only
    thread_waits: tuple[tuple[int, float], ...] = ()  # (thread id, its wait); a difference: over the interval

    def __sub__(self, before: "Usage") -> "Usage":
        prev = dict(before.thread_waits)
        return Usage(self.cpu_s - before.cpu_s, self.wait_s - before.wait_s,
                     tuple((tid, wait - prev.get(tid, 0.0)) for tid, wait in self.thread_waits))

    @property
    def longest_wait_s(self) -> float:
        """The longest any one thread waited for a core: a part of the wall clock the worker spent not running.
        (The sum over threads can exceed the wall clock when a thread pool waits in parallel.)"""
        return max((wait for _, wait in self.thread_waits), default=0.0)

    @property
    def slowdown(self) -> float:
        """How much longer the work took for waiting on a core: (running + waiting) / running, >= 1."""
        return (self.cpu_s + max(self.wait_s, 0.0)) / self.cpu_s if self.cpu_s > 0 else 1.0


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after the command name: state (field 3 of proc(5)), ..., utime (14), stime, cutime, cstime (17)
    return sum(int(x) for x in fields[11:15]) / _TICKS


def _schedstat(pid: int, tid: int | str) -> tuple[float, float]:
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        run_ns, wait_ns = f.read().split()[:2]  # ns on a cpu, ns waiting on a runqueue, timeslices
    return int(run_ns) / 1e9, int(wait_ns) / 1e9


def thread_times(pid: int) -> dict[int, tuple[float, float]]:
    """Seconds each live thread of `pid` has run on a core and waited for one, by thread id (schedstat)."""
    times = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            times[int(tid)] = _schedstat(pid, tid)
        except (OSError, IndexError, ValueError):
            continue  # the thread ended, or no schedstat in this kernel
    return times


def own_wait_s() -> float:
    """Seconds the calling thread has sat runnable waiting for a core (0.0 where schedstat is missing)."""
    try:
        return _schedstat(os.getpid(), threading.get_native_id())[1]
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_usage(pids: Iterable[int]) -> Usage | None:
    """The sum over the live processes among `pids` (in the sandbox, its pid-namespace init reaps whatever a
    candidate started, so their CPU stays counted); None when none could be read."""
    cpu = 0.0
    waits: list[tuple[int, float]] = []
    seen = False
    for pid in pids:
        try:
            cpu += _cpu_s(pid)
            waits += [(tid, wait) for tid, (_run, wait) in thread_times(pid).items()]
            seen = True
        except (OSError, IndexError, ValueError):
            continue
    return Usage(cpu, sum(wait for _, wait in waits), tuple(waits)) if seen else None
