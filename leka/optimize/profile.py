"""Profile first: each kernel's share of the end-to-end time of the default build, and the budget split.

share = weight x time of the kernel's default (unscheduled) build / sum over kernels. The budget is
divided by share, as MetaSchedule's task scheduler gives trials to the tasks that dominate latency.
Kernels under MIN_SHARE get no search: each is tuned too little to find anything, yet once the large
kernels are tuned the many small ones add up (SqueezeNet-mini: ~3.5 of 6.3 ms). They get a quick pass
instead (tune.run_quick: the offline rules' first candidates judged once each), which shares QUICK_FRACTION
of the time limit; the searched kernels split the rest, and one whose part is under MIN_SEARCH_MINUTES
joins the quick pass with its minutes. The pass runs after the searches and also gets what they left of the
time limit (a search stops early when its rules are exhausted): SqueezeNet-mini, minutes=3, load 4.7, left
18 of its 28 kernels (5.4 of 6.8 ms) at their default builds when the pass had only its own 0.9 min.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from leka.budget import CHARGE_KINDS, INTEGER_KINDS, Budget

from .extract import KernelSpec, _parse_trusted

MIN_SHARE = 0.02
QUICK_FRACTION = 0.3  # of the minutes limit, for the quick pass over the kernels under MIN_SHARE
# A kernel whose share of the minutes is below this joins the quick pass (its minutes with it): the agent
# spends its first ~0.3-0.7 min (worker start, the naive build's measure) before it judges any rule candidate
# (MobileNet-blocks, minutes=3, load 14: four kernels of 0.07-0.49 min kept 4.5-15.6 ms defaults, while
# the quick pass replaced two smaller ones by 21x and 51x in 0.5-0.7 min each)
MIN_SEARCH_MINUTES = 1.0
FIXED_WHY = "scheduled as written: one kernel for a whole recurrent sequence"


@dataclass
class KernelProfile:
    spec: KernelSpec
    default_ms: float | None  # one call of the default build (None: not measurable here)
    share: float = 0.0
    budget: str | None = None  # the Budget spec this kernel gets; None = not tuned
    why_not: str = ""  # why it gets no budget
    quick: bool = False  # under MIN_SHARE: judged in the quick pass (tune.run_quick) instead of searched
    quick_minutes: float | None = None  # its part of the quick pass's time
    compile_s: float = 0.0  # the default build's compile, in the profile (what the model's builds will take)

    def to_json(self) -> dict[str, Any]:
        return {**self.spec.to_json(), "default_ms": self.default_ms, "share": self.share, "budget": self.budget}


# A default build slower than this a call is timed by SLOW_CALLS plain calls (the fastest counts: the first pays any
# lazy set-up): light_vgg19's 224x224 convolutions take ~2 s a call, and a first call, a probe (time_evaluator's
# untimed call and one) and five repeats of each of its 20 kernels made a 2-minute profile, a fifth of minutes=10,
# for a ranking and a reserve that a call or two settle as well.
SLOW_CALL_MS = 100.0
SLOW_CALLS = 2
REPEATS = 5


def time_default(spec: KernelSpec, preset: Any, min_ms: float = 20.0) -> tuple[float, float]:
    """Median ms of one call of the kernel's default build (TVM's own lowering: trusted, run here), and the
    seconds its compile took."""
    import time

    import tvm

    t0 = time.perf_counter()
    exe = tvm.compile(tvm.IRModule({"main": _parse_trusted(spec.script)}), target=preset.tvm_target())
    compile_s = time.perf_counter() - t0
    dev = tvm.cpu()
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.standard_normal(s).astype(d) if np.dtype(d).kind == "f" else
                               np.zeros(s, d), dev) for _n, s, d, _r in spec.args]
    calls = []
    for _ in range(SLOW_CALLS):
        t0 = time.perf_counter()
        exe["main"](*args)
        calls.append((time.perf_counter() - t0) * 1e3)
        if calls[-1] < SLOW_CALL_MS:
            break
    if min(calls) >= SLOW_CALL_MS:
        return min(calls), compile_s
    probe = exe.mod.time_evaluator("main", dev, number=1, repeat=1)(*args).mean * 1e3
    number = max(1, int(min_ms / max(probe, 1e-3)))
    res = exe.mod.time_evaluator("main", dev, number=number, repeat=REPEATS)(*args)
    return float(np.median(res.results)) * 1e3, compile_s


def profile(specs: list[KernelSpec], preset: Any) -> list[KernelProfile]:
    """Kernels with their default time and share, largest share first (equal shares if not runnable)."""
    if not preset.runnable or preset.family != "cpu":
        profs = [KernelProfile(s, None) for s in specs]
        total_w = sum(s.weight for s in specs) or 1
        for p in profs:
            p.share = p.spec.weight / total_w
        return profs
    times = [time_default(s, preset) for s in specs]
    total = sum(ms * s.weight for s, (ms, _c) in zip(specs, times)) or 1.0
    profs = [KernelProfile(s, ms, ms * s.weight / total, compile_s=c) for s, (ms, c) in zip(specs, times)]
    return sorted(profs, key=lambda p: -p.share)


def split_budget(profs: list[KernelProfile], spec: str | None, quick: bool = True) -> Budget:
    """Give each kernel at or above MIN_SHARE its share of every limit of `spec` (less the quick pass's part
    of the minutes when there are kernels under MIN_SHARE, `quick` and a minutes limit); returns the whole
    Budget."""
    whole = Budget.parse(spec)
    eligible = [p for p in profs if p.share >= MIN_SHARE and not p.spec.fixed]
    small = [p for p in profs if p.share < MIN_SHARE and not p.spec.fixed]
    norm = sum(p.share for p in eligible) or 1.0
    minutes = whole.limits.get("minutes")
    reserve = QUICK_FRACTION * minutes if quick and small and minutes else 0.0
    for p in profs:
        p.budget, p.why_not, p.quick, p.quick_minutes = None, f"share < {MIN_SHARE:.0%}", False, None
        if p.spec.fixed:
            p.why_not = FIXED_WHY
    # the quick pass is paid in minutes: a budget without a time limit (compiles=8) is not overspent by it
    for p in small if quick and minutes else []:
        p.quick, p.quick_minutes = True, reserve / len(small)
    for p in eligible:
        parts: list[str] = []
        for kind in CHARGE_KINDS + ("minutes",):
            limit = whole.limits.get(kind)
            if limit is None:
                continue
            amount = (limit - (reserve if kind == "minutes" else 0.0)) * p.share / norm
            if kind in INTEGER_KINDS:
                amount = float(int(amount))
            if amount <= 0:
                p.why_not = f"its share of {kind} rounds to 0"
                break
            parts.append(f"{kind}={amount:g}" if kind not in INTEGER_KINDS else f"{kind}={int(amount)}")
        else:  # every limit gave it a share
            p.budget, p.why_not = ",".join(parts), ""
        searched = (minutes - reserve) * p.share / norm if minutes else None
        if quick and searched is not None and searched < MIN_SEARCH_MINUTES:
            p.budget, p.quick, p.quick_minutes = None, True, searched
            p.why_not = f"its {searched:.2g} min < {MIN_SEARCH_MINUTES:g} min of search: quick pass"
    return whole
