"""Metrics against hand-computed values (docs/metrics.md)."""
import math

import pytest

from leka.bench import metrics as M


def rec(task, compiled=True, correct=True, speedup=None, baseline="tvm-naive"):
    return {"task": task, "compiled": compiled, "correct": correct, "speedup": speedup, "baseline": baseline}


# Task a: 4 samples (two correct: 0.6x and 1.2x, one wrong, one compile error); task b: 2 samples at 2.5x.
RECORDS = [rec("a", speedup=0.6), rec("a", speedup=1.2), rec("a", correct=False, speedup=None),
           rec("a", compiled=False, correct=None), rec("b", speedup=2.5), rec("b", speedup=2.5)]


def test_pass_at_k_hand_values():
    assert M.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert M.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert M.pass_at_k(4, 0, 2) == 0.0
    assert M.pass_at_k(3, 2, 2) == 1.0  # every pair contains a success
    with pytest.raises(ValueError):
        M.pass_at_k(2, 1, 3)


def test_correct_at_k_averages_tasks():
    assert M.correct_at_k(RECORDS, 1) == pytest.approx((2 / 4 + 1.0) / 2)
    # k=2: task a: 1 - C(2,2)/C(4,2) = 5/6; task b: 1
    assert M.correct_at_k(RECORDS, 2) == pytest.approx((5 / 6 + 1.0) / 2)
    # k=3 only task a has n>=3: 1 - C(2,3)/C(4,3) = 1
    assert M.correct_at_k(RECORDS, 3) == pytest.approx(1.0)


@pytest.mark.parametrize("p,expected", [(0.0, (0.5 + 1) / 2), (0.5, (0.5 + 1) / 2), (0.8, (0.25 + 1) / 2),
                                        (1.0, (0.25 + 1) / 2), (1.5, (0 + 1) / 2), (2.0, (0 + 1) / 2),
                                        (3.0, 0.0)])
def test_fast_at_p(p, expected):
    assert M.fast_at_p(RECORDS, p) == pytest.approx(expected)


def test_fast_at_p_strict_and_failures_zero():
    # speedup exactly p is not faster than p; a wrong sample with a speedup counts 0
    rs = [rec("x", speedup=1.0), rec("x", correct=False, speedup=5.0)]
    assert M.fast_at_p(rs, 1.0) == 0.0
    assert M.fast_at_p(rs, 0.0) == 0.5


def timed(task, ratios, cand_s=1e-3):
    """A correct record whose rounds have the given baseline/candidate ratios (speedup: ratio of medians)."""
    base = [cand_s * q for q in ratios]
    r = rec(task, speedup=sorted(base)[len(base) // 2] / cand_s)
    r["detail"] = {"timing": {"candidate": {"rounds_s": [cand_s] * len(ratios)}, "baseline": {"rounds_s": base}}}
    return r


def test_order_statistic_rank_hand_values():
    # n=10: P(X<=1) = 11/1024 = 0.011 <= 0.05 < P(X<=2) = 56/1024 = 0.055 -> the 2nd smallest
    assert M._order_statistic_rank(10, 0.95) == 2
    assert M._order_statistic_rank(40, 0.95) == 15  # P(X<=14) = 0.040, P(X<=15) = 0.077
    assert M._order_statistic_rank(5, 0.95) == 1  # too few rounds: the minimum


def test_fast_beyond_noise_with_rounds():
    ratios = [1.52, 1.49, 1.50, 1.51, 1.48, 1.53, 1.50, 1.47, 1.55, 1.50]
    r = timed("x", ratios)
    assert M.speedup_lower_bound(r) == pytest.approx(1.48 / (1 + M.SYSTEMATIC_MARGIN))  # 2nd smallest
    assert M.is_fast(r, 1.0) and M.is_fast(r, 1.4) and not M.is_fast(r, 1.5)
    # the same code against itself: ratios within +-2 % of 1 and a headline of 1.01 is noise
    assert not M.is_fast(timed("x", [1.01, 0.99, 1.02, 0.98, 1.01, 1.0, 1.02, 0.99, 1.01, 1.0]), 1.0)
    # a loaded machine preempting one side for whole rounds: the headline says 3.4x, the rounds disagree
    loaded = timed("x", [5.1, 3.4, 0.98, 0.2, 5.2, 5.0, 0.19, 0.88, 5.05, 5.04, 0.19, 1.15, 5.07, 5.06, 0.72])
    assert loaded["speedup"] > 3 and not M.is_fast(loaded, 1.0)


def test_best_rounds_cap_a_baseline_preempted_in_most_rounds():
    # identical code on a loaded machine: the baseline lost 1-3 ms scheduler ticks in most rounds, the candidate
    # in few, so the paired ratios mostly exceed 1; the fastest rounds of both sides agree (0.534 ms)
    cand = [0.534e-3] * 18 + [3.5e-3] * 2
    base = [3.55e-3] * 16 + [0.534e-3] * 4
    r = rec("x", speedup=base[10] / cand[10])
    assert sorted(b / c for c, b in zip(cand, base))[M._order_statistic_rank(20, 0.95) - 1] > 6  # rounds alone: fast
    r["detail"] = {"timing": {"candidate": {"rounds_s": cand, "min_s": min(cand)},
                              "baseline": {"rounds_s": base, "min_s": min(base)}}}
    assert r["speedup"] > 6 and not M.is_fast(r, 1.0)
    assert M.speedup_lower_bound(r) == pytest.approx(1 / (1 + M.SYSTEMATIC_MARGIN))


def test_fast_without_rounds_falls_back_to_a_fixed_margin():
    assert not M.is_fast(rec("x", speedup=1.05), 1.0)  # 1.05 / 1.10 < 1
    assert M.is_fast(rec("x", speedup=1.2), 1.0)
    spread = dict(rec("x", speedup=1.2), spread=0.05, baseline_spread=0.05)  # 1.2 / 1.2 is not > 1
    assert not M.is_fast(spread, 1.0)


def test_compile_rate_and_geomean():
    assert M.compile_rate(RECORDS) == pytest.approx(5 / 6)
    assert M.geomean_speedup(RECORDS) == pytest.approx((0.6 * 1.2 * 2.5 * 2.5) ** 0.25)
    assert M.geomean_speedup([rec("a", correct=False, speedup=3.0)]) is None


def test_roofline_fraction():
    facts = {"peak_fp32_gflops": 100.0, "mem_bw_gbs": 10.0}
    # AI = 2 FLOP/B -> bound min(100, 20) = 20 GFLOP/s; 2 GFLOP in 200 ms = 10 GFLOP/s -> 0.5
    assert M.roofline_fraction(2e9, 1e9, 200.0, facts) == pytest.approx(0.5)
    # compute-bound: AI = 1000 -> bound 100; 2 GFLOP in 40 ms = 50 GFLOP/s -> 0.5
    assert M.roofline_fraction(2e9, 2e6, 40.0, facts) == pytest.approx(0.5)
    assert M.roofline_fraction(2e9, 1e9, 200.0, {"peak_fp32_gflops": None}) is None


def test_roofline_fraction_stays_within_what_the_facts_allow():
    """A fraction of 443 % was reported: DRAM bandwidth bounded a kernel whose data sat in cache."""
    facts = {"peak_fp32_gflops": 100.0, "mem_bw_gbs": 10.0, "l2_bytes": 1 << 20}
    # 1 MB of traffic, AI = 2: under the DRAM roof (20 GFLOP/s) 80 GFLOP/s would read 4.0; it fits in L2: 0.8
    assert M.roofline_fraction(2e6, 1e6, 0.025, facts) == pytest.approx(0.8)
    assert M.roofline_fraction(2e6, 1e6, 0.025, {**facts, "l2_bytes": 1000}) == 1.0  # capped, not 4.0
    assert M.roofline_fraction(2e9, 2e6, 10.0, facts) == 1.0  # 200 GFLOP/s over a 100 GFLOP/s peak


def test_summary_names_baseline():
    s = M.summarize(RECORDS, ks=(1, 2, 5))
    assert s.baseline == "tvm-naive"
    assert s.tasks == 2 and s.samples == 6
    assert set(s.fast_at) == {f"Fast@{p:.1f}" for p in M.FAST_P}
    assert set(s.correct_at_k) == {"Correct@1", "Correct@2"}  # k=5 > min n=2 is left out
    assert math.isclose(s.correct_at_1, 0.75)
