"""Benchmark metrics over sample records (formulas and conventions: docs/metrics.md).

A *sample* is one independent attempt of a method on a task: the evaluator's result JSON for the
method's final candidate (keys compiled, correct, speedup, candidate_ms, baseline, ...). Failures count
as 0 everywhere: a sample that did not compile, crashed, timed out or was wrong is neither correct nor
fast. Per-task estimates are averaged over tasks (each task weighs the same, whatever its n).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)

Record = Mapping[str, Any]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k draws without replacement from n samples succeeds),
    given c of the n succeeded: 1 - C(n-c, k) / C(n, k)  (Chen et al. 2021, pass@k)."""
    if k < 1 or n < k:
        raise ValueError(f"pass@k needs 1 <= k <= n (got n={n}, k={k})")
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} outside [0, n={n}]")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def is_correct(r: Record) -> bool:
    return bool(r.get("compiled")) and r.get("correct") is True


# Fast@p beyond noise (docs/metrics.md, "Fast@p"). Calibrated on the naive-vs-itself control (`leka bench run
# --method tvm-naive`, 5 x 40 tasks): a strict speedup > 1.0 counts 47-70 % of it as fast; this rule 0-2.6 %.
FAST_CONFIDENCE = 0.95  # one-sided confidence of the lower bound on the median per-round ratio
# Two builds of the same code timed in one worker differ by up to ~5 % with tight rounds (buffer placement,
# code alignment), which no spread within one measurement shows; the project's reproducibility goal is 5 % too.
SYSTEMATIC_MARGIN = 0.05
# Records without per-round times (older stores): speedup / (1 + FALLBACK_MARGIN + spread + baseline_spread).
FALLBACK_MARGIN = 0.10


def _best_round_ratio(r: Record) -> float | None:
    """Baseline's fastest round over the candidate's: noise on a loaded machine only adds time, so this is
    what the kernels show at their best (one side preempted in most rounds cannot inflate it)."""
    timing = (r.get("detail") or {}).get("timing") or {}
    cand, base = (timing.get("candidate") or {}).get("min_s"), (timing.get("baseline") or {}).get("min_s")
    return base / cand if cand and base and cand > 0 and base > 0 else None


def _paired_ratios(r: Record) -> list[float] | None:
    """Per-round baseline/candidate time ratios from the evaluator's detail.timing, if it kept them."""
    timing = (r.get("detail") or {}).get("timing") or {}
    cand = (timing.get("candidate") or {}).get("rounds_s")
    base = (timing.get("baseline") or {}).get("rounds_s")
    if not cand or not base or len(cand) != len(base):
        return None
    ratios = [b / c for c, b in zip(cand, base) if c and b and c > 0 and b > 0]
    return ratios if len(ratios) == len(cand) else None


def _order_statistic_rank(n: int, confidence: float) -> int:
    """The largest k such that the k-th smallest of n paired ratios lies below their median with probability
    >= confidence (sign test: P(Binomial(n, 1/2) <= k - 1) <= 1 - confidence); 1 (the minimum) when n is too
    small for that confidence."""
    k, below = 1, 0.5 ** n  # P(X <= 0)
    while k < n and below + math.comb(n, k) * 0.5 ** n <= 1 - confidence:
        below += math.comb(n, k) * 0.5 ** n
        k += 1
    return k


def speedup_lower_bound(r: Record) -> float | None:
    """The speedup this sample shows beyond its measurement noise (None if it was not timed).

    With per-round times: the distribution-free lower confidence bound of the median per-round ratio (an order
    statistic, FAST_CONFIDENCE one-sided), capped by the headline speedup and by the ratio of the two sides'
    fastest rounds, divided by 1 + SYSTEMATIC_MARGIN. A measurement whose rounds disagree, or where one side
    was preempted in most rounds on a loaded machine, gets a low bound whatever its headline. Without them:
    speedup / (1 + FALLBACK_MARGIN + spread + baseline_spread)."""
    got = _ratio_band(r)
    if got is None:
        return None
    s, ratios, k, noise = got
    if ratios is None:
        return s / (1.0 + noise)
    caps = [sorted(ratios)[k - 1], s] + [b for b in (_best_round_ratio(r),) if b is not None]
    return min(caps) / (1.0 + SYSTEMATIC_MARGIN)


def speedup_upper_bound(r: Record) -> float | None:
    """The mirror of speedup_lower_bound: the speedup this sample cannot exceed beyond its noise (the upper
    order statistic of the per-round ratios, at least the headline, times 1 + SYSTEMATIC_MARGIN)."""
    got = _ratio_band(r)
    if got is None:
        return None
    s, ratios, k, noise = got
    if ratios is None:
        return s * (1.0 + noise)
    return max(sorted(ratios)[len(ratios) - k], s) * (1.0 + SYSTEMATIC_MARGIN)


def _ratio_band(r: Record) -> tuple[float, list[float] | None, int, float] | None:
    """What both bounds start from: (headline speedup, per-round ratios or None, order-statistic rank, the
    fallback's relative noise for records without rounds); None when the sample was not timed."""
    s = r.get("speedup")
    if not s or s <= 0:
        return None
    ratios = _paired_ratios(r)
    noise = FALLBACK_MARGIN + float(r.get("spread") or 0.0) + float(r.get("baseline_spread") or 0.0)
    k = _order_statistic_rank(len(ratios), FAST_CONFIDENCE) if ratios is not None else 0
    return s, ratios, k, noise


def is_slower(r: Record) -> bool:
    """Correct but slower than its baseline beyond measurement noise (speedup_upper_bound < 1)."""
    ub = speedup_upper_bound(r)
    return is_correct(r) and ub is not None and ub < 1.0


def is_fast(r: Record, p: float) -> bool:
    """Correct and faster than p times the baseline beyond measurement noise: speedup_lower_bound > p.
    Fast@0 == correct. The one definition of "fast" for every report, experiment and baseline."""
    if not is_correct(r):
        return False
    if p <= 0:
        return True
    lb = speedup_lower_bound(r)
    return lb is not None and lb > p


def _by_task(records: Iterable[Record]) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        groups[str(r["task"])].append(r)
    return dict(groups)


def _mean_pass_at_k(records: Iterable[Record], k: int, ok) -> tuple[float | None, int]:
    """Mean over tasks with n >= k of pass@k; returns (value, number of tasks used)."""
    vals = [pass_at_k(len(rs), sum(1 for r in rs if ok(r)), k) for rs in _by_task(records).values() if len(rs) >= k]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def correct_at_k(records: Iterable[Record], k: int = 1) -> float | None:
    """Correct@k: mean over tasks of pass@k with success = compiled and correct."""
    return _mean_pass_at_k(records, k, is_correct)[0]


def fast_at_p(records: Iterable[Record], p: float, k: int = 1) -> float | None:
    """Fast@p (at k): mean over tasks of pass@k with success = is_fast(r, p) (beyond noise)."""
    return _mean_pass_at_k(records, k, lambda r: is_fast(r, p))[0]


def compile_rate(records: Iterable[Record]) -> float | None:
    rs = list(records)
    return sum(1 for r in rs if r.get("compiled")) / len(rs) if rs else None


def geomean(values: Iterable[float]) -> float | None:
    vs = [float(v) for v in values]
    if not vs:
        return None
    if any(v <= 0 for v in vs):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in vs) / len(vs))


def geomean_speedup(records: Iterable[Record]) -> float | None:
    """Geometric mean of speedup over correct samples that were timed (None if there are none)."""
    return geomean(r["speedup"] for r in records if is_correct(r) and r.get("speedup"))


def attainable_gflops(flops: float, nbytes: float, peak_gflops: float, bw_gbs: float) -> float:
    """Roofline: min(peak, arithmetic intensity * bandwidth), in GFLOP/s."""
    if nbytes <= 0:
        return peak_gflops
    return min(peak_gflops, (flops / nbytes) * bw_gbs)


def roofline_fraction(flops: float, nbytes: float, time_ms: float, facts: Mapping[str, Any]) -> float | None:
    """Achieved GFLOP/s over the roofline bound from the target's facts, at most 1; None when facts lack peak
    or bandwidth, or the time is unknown. Bytes are the compulsory traffic (inputs + outputs once). Traffic that
    fits in the largest cache the facts name is not bound by DRAM bandwidth: only the compute peak bounds it.
    Above the peak (an algorithm rewrite doing fewer FLOPs than the task's count, an int8 kernel over the fp32
    peak) the fraction is 1: the facts allow no more."""
    peak, bw = facts.get("peak_fp32_gflops"), facts.get("mem_bw_gbs")
    if not peak or not bw or not time_ms or time_ms <= 0 or flops <= 0:
        return None
    achieved = flops / (time_ms * 1e-3) / 1e9
    cache = max((int(facts.get(k) or 0) for k in ("l1d_bytes", "l2_bytes", "l3_bytes")), default=0)
    bound = float(peak) if 0 < nbytes <= cache else attainable_gflops(flops, nbytes, float(peak), float(bw))
    return min(1.0, achieved / bound)


@dataclass
class Summary:
    """Metrics of one group of records (a run, or a level/domain/target slice of it)."""

    samples: int
    tasks: int
    baseline: str | None
    compile_rate: float | None
    correct_at_1: float | None
    fast_at: dict[str, float | None]  # "Fast@1.0" -> value (k=1)
    geomean_speedup: float | None
    correct_at_k: dict[str, float | None] = field(default_factory=dict)
    roofline_median: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def baseline_name(records: Iterable[Record]) -> str | None:
    names = sorted({str(r["baseline"]) for r in records if r.get("baseline")})
    return ", ".join(names) if names else None


def summarize(records: Iterable[Record], ks: Iterable[int] = (1,), fast_ps: Iterable[float] = FAST_P) -> Summary:
    rs = list(records)
    tasks = _by_task(rs)
    max_n = min((len(v) for v in tasks.values()), default=0)
    roof = sorted(r["roofline_fraction"] for r in rs if is_correct(r) and r.get("roofline_fraction") is not None)
    return Summary(
        samples=len(rs), tasks=len(tasks), baseline=baseline_name(rs), compile_rate=compile_rate(rs),
        correct_at_1=correct_at_k(rs, 1) if rs else None,
        fast_at={f"Fast@{p:.1f}": fast_at_p(rs, p, 1) if rs else None for p in fast_ps},
        geomean_speedup=geomean_speedup(rs),
        correct_at_k={f"Correct@{k}": correct_at_k(rs, k) for k in ks if 1 <= k <= max_n},
        roofline_median=roof[len(roof) // 2] if roof else None,
    )
