"""What the end-to-end comparison lets one say: faster, slower, or undecided, and when not to trust it.

The build job times the builds interleaved over rounds (e2e_timing.alternate); each round gives each build a
median, and the rounds pair up. A build is "faster" than another only when it is faster in every round, "slower"
only when slower in every round, else the comparison is undecided (the rounds' ratios straddle 1). Warnings: the
host's load average above its cores during the timing, or a spread across rounds wider than SPREAD_WARN.
"""
from __future__ import annotations

from typing import Any

SPREAD_WARN = 0.10  # range of the rounds' medians over the median, above which a figure is not to be relied on


def round_ratios(opt: dict[str, Any], other: dict[str, Any]) -> list[float]:
    """Per round, the other build's time over the optimised one's (>1: the optimised build is faster)."""
    a, b = opt.get("round_ms") or [opt["median_ms"]], other.get("round_ms") or [other["median_ms"]]
    return [y / x for x, y in zip(a, b) if x > 0]


def verdict(opt: dict[str, Any], other: dict[str, Any]) -> str:
    """The optimised build against `other`: "1.32x faster", "2.38x slower" or "undecided (0.95-1.08x ...)"."""
    ratios = round_ratios(opt, other)
    med = other["median_ms"] / opt["median_ms"] if opt["median_ms"] > 0 else 0.0
    if not ratios or med <= 0:
        return "-"
    if min(ratios) > 1.0:
        return f"{med:.2f}x faster"
    if max(ratios) < 1.0:
        return f"{1 / med:.2f}x slower"
    return f"undecided ({min(ratios):.2f}-{max(ratios):.2f}x across rounds)"


def spread(r: dict[str, Any]) -> float:
    """The spread across rounds (range over median; older artifacts: the IQR within the one timing)."""
    return float(r.get("range_rel", r.get("iqr_rel", 0.0)))


def warnings(latency: dict[str, Any] | None, host: dict[str, Any] | None) -> list[str]:
    """Why the end-to-end figures may not hold on another run: a loaded host, or a spread too wide to decide."""
    out: list[str] = []
    if not latency:
        return out
    if host and host.get("cut_short"):
        out.append(f"timed over {host['cut_short']} (fewer rounds: a wider spread is possible)")
    if host and host.get("comparisons_capped"):
        out.append(f"{' and '.join(host['comparisons_capped'])} timed in fewer rounds (seconds a call; for "
                   "comparison only)")
    if host:
        load = max(host.get("load_before") or 0.0, host.get("load_after") or 0.0)
        if load > host.get("cores", 1):
            out.append(f"host loaded: load average {load:.1f} on {host['cores']} cores while timing; the "
                       "end-to-end figures may swing between runs (time again on an idle host)")
    wide = {n: spread(r) for n, r in latency.items() if isinstance(r, dict) and spread(r) > SPREAD_WARN}
    if wide:
        worst = max(wide, key=lambda n: wide[n])
        out.append(f"spread across rounds up to {wide[worst]:.0%} ({worst}): differences smaller than that are "
                   "not decided by this timing")
    return out
