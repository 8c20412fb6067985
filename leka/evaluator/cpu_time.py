"""What the sandboxed worker's processes used, read by the parent from the kernel's accounting (/proc), which
the worker cannot alter: CPU seconds, and seconds its threads sat runnable waiting for a core. Unlike the
parent's wall clock, CPU time does not grow while the worker waits on a loaded machine, so it is what the
timing plausibility check compares the reported work with; the wait says how loaded the machine was."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    cpu_s: float  # user + system, every thread, and the children it has reaped
    wait_s: float  # runnable but not running (schedstat run_delay), live threads only

    def __sub__(self, before: "Usage") -> "Usage":
        return Usage(self.cpu_s - before.cpu_s, self.wait_s - before.wait_s)

    @property
    def slowdown(self) -> float:
        """How much longer the work took for waiting on a core: (running + waiting) / running, >= 1."""
        return (self.cpu_s + max(self.wait_s, 0.0)) / self.cpu_s if self.cpu_s > 0 else 1.0


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after the command name: state (field 3 of proc(5)), ..., utime (14), stime, cutime, cstime (17)
    return sum(int(x) for x in fields[11:15]) / _TICKS


def _wait_s(pid: int) -> float:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])  # ns on a cpu, ns waiting on a runqueue, timeslices
        except (OSError, IndexError, ValueError):
            continue  # the thread ended, or no schedstat in this kernel
    return total / 1e9


def tree_usage(pids: Iterable[int]) -> Usage | None:
    """The sum over the live processes among `pids` (in the sandbox, its pid-namespace init reaps whatever a
    candidate started, so their CPU stays counted); None when none could be read."""
    cpu = wait = 0.0
    seen = False
    for pid in pids:
        try:
            cpu += _cpu_s(pid)
            wait += _wait_s(pid)
            seen = True
        except (OSError, IndexError, ValueError):
            continue
    return Usage(cpu, wait) if seen else None
