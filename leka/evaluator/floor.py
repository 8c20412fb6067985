"""A lower bound on one timed run that the parent can trust: computed from the task and the target alone,
never from anything the worker says.

Before every timed run the preproc poisons the outputs (leka.runners.poison), so a kernel whose answer is
checked must write every output byte on every run. Writing B bytes takes at least B / (the fastest the
target can store), and any run also pays one call through the packed-function ABI. A timing reply whose
median run of either side is below that is impossible: the worker shortened it (`standin_worker.py
lie-scale`, whose shortened runs otherwise read like a tiny kernel's because the untimed preproc fills the
round's wall time).

The store ceilings are generous on purpose — an honest kernel must never meet its floor, even with its
outputs in L1 — so the floor catches large lies (the 1000x of lie-scale), not a factor of a few:
- CPU targets: 128 bytes per cycle per core at 6 GHz (768 GB/s). No shipped core stores more than 64 bytes a
  cycle to L1 (two 256-bit or one 512-bit store per cycle on Zen 4, Golden Cove, Neoverse V2; Zen 4 at
  ~2.6 GHz here: ~170 GB/s), and none clocks above 6 GHz; times every core the kernel may run on (the
  target's cores or the worker's thread pool, whichever is larger), since a parallel kernel stores from
  all of them at once. PoCL (the "opencl" family on this machine) runs on these cores too, but its device
  may be a GPU: it gets the GPU ceiling.
- GPU targets (cuda, opencl): 50 TB/s, ten times the HBM of an H200 (4.8 TB/s) and above any GPU's L2.
Not used: the task's FLOPs over the target's peak. An algorithm rewrite (separable filters, prefix sums,
reuse of common subexpressions) legitimately does far fewer operations than the definition counts, so a
FLOP floor could call an honest kernel impossible; the bytes every run must write hold for any algorithm.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: timing.py, which the worker imports, imports this module
    from leka.targets import TargetPreset
    from leka.tasks.task import Task

CPU_STORE_BYTES_PER_CYCLE = 128
CPU_CLOCK_CEILING_HZ = 6e9
GPU_STORE_BPS = 50e12
CALL_FLOOR_S = 1e-9  # a call and return through the packed-function ABI: tens of instructions, > 1 ns


@dataclass(frozen=True)
class RunFloor:
    """The least one run can take: writing `out_bytes` at `store_bps`, plus the call."""
    out_bytes: int
    store_bps: float
    how: str  # where store_bps comes from, for the failure message

    @property
    def seconds(self) -> float:
        return CALL_FLOOR_S + self.out_bytes / self.store_bps

    def describe(self) -> str:
        return (f"writing its {self.out_bytes:,} output bytes takes at least {self.seconds * 1e9:.3g} ns "
                f"({self.how})")


def store_ceiling(target: TargetPreset, threads: int | None = None) -> tuple[float, str]:
    """(bytes per second no kernel on this target can store faster than, how it was derived)."""
    if target.family != "cpu":
        return GPU_STORE_BPS, f"at most {GPU_STORE_BPS / 1e12:g} TB/s on a GPU"
    facts = target.facts or {}
    cores = max(int(facts.get("cores") or target.target.get("num-cores") or 1), int(threads or 1))
    per_core = CPU_STORE_BYTES_PER_CYCLE * CPU_CLOCK_CEILING_HZ
    return cores * per_core, f"at most {cores} cores x {per_core / 1e9:g} GB/s"


def run_floor(task: Task, target: TargetPreset, threads: int | None = None) -> RunFloor:
    """The floor of one run of any correct kernel for `task` on `target` (see the module docstring)."""
    bps, how = store_ceiling(target, threads)
    return RunFloor(sum(a.nbytes for a in task.outputs), bps, how)
