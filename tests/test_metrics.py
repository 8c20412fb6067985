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


def test_summary_names_baseline():
    s = M.summarize(RECORDS, ks=(1, 2, 5))
    assert s.baseline == "tvm-naive"
    assert s.tasks == 2 and s.samples == 6
    assert set(s.fast_at) == {f"Fast@{p:.1f}" for p in M.FAST_P}
    assert set(s.correct_at_k) == {"Correct@1", "Correct@2"}  # k=5 > min n=2 is left out
    assert math.isclose(s.correct_at_1, 0.75)
