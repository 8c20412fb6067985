"""The parent sizes the timing rounds on its own clock (leka/evaluator/calibrate.py) and holds the reply to them
(timing.plausible's `asked`). Clocks here are simulated: a request costs a fixed overhead plus its runs; the real
workers and the lying ones are in tests/test_adversarial.py."""
from __future__ import annotations

import os
import threading

import pytest

from leka.evaluator.calibrate import SideRounds, calibrate_side, size_rounds, time_running
from leka.evaluator.cpu_time import Usage, own_wait_s, tree_usage
from leka.evaluator.timing import MAX_RUNS, plausible


class SimClock:
    """A request of n runs lasts overhead + n * per_run seconds (plus `first_extra` on the first run: lazy set-up)."""

    def __init__(self, per_run: float, overhead: float = 3e-4, first_extra: float = 0.0):
        self.per_run, self.overhead, self.first_extra = per_run, overhead, first_extra
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, n: int, arm: bool) -> float:
        extra = self.first_extra if not any(k for k, _ in self.calls) and n else 0.0
        self.calls.append((n, arm))
        return self.overhead + n * self.per_run + extra


@pytest.mark.parametrize("per_run, want_n", [(3e-6, 667), (2.5e-4, 8), (1e-9, MAX_RUNS)])
def test_runs_per_round_fill_min_run_ms_on_the_parents_clock(per_run, want_n):
    clock = SimClock(per_run, first_extra=0.05)
    got = calibrate_side(clock, 2.0)
    assert got is not None and got.n == pytest.approx(want_n, rel=0.02), got
    assert got.per_run_s == pytest.approx(per_run, rel=0.05) or per_run < 1e-8  # the overhead taken out
    assert clock.calls[0] == (0, True) and not any(arm for _, arm in clock.calls[1:])  # armed once, first


def test_a_run_lasting_several_rounds_is_measured_once():
    clock = SimClock(0.012)
    got = calibrate_side(clock, 2.0)
    assert got == SideRounds(1, pytest.approx(0.012, rel=0.01))
    assert [n for n, _ in clock.calls].count(1) == 2  # the set-up run, then one measurement


@pytest.mark.parametrize("per_run", [0.6, 2.0])
def test_a_run_lasting_many_rounds_is_measured_by_the_set_up_request_alone(per_run):
    """light_vgg19's default builds take ~2 s a run: each further request of one run costs two (the timer's
    untimed first call and the run)."""
    clock = SimClock(per_run, first_extra=0.01 * per_run)
    got = calibrate_side(clock, 2.0)
    assert got == SideRounds(1, pytest.approx(per_run, rel=0.02))
    assert [n for n, _ in clock.calls].count(1) == (2 if per_run < 1.0 else 1)


def test_a_slow_lazy_set_up_does_not_pass_a_short_run_off_as_a_long_one():
    clock = SimClock(3e-6, first_extra=0.5)
    got = calibrate_side(clock, 2.0)
    assert got is not None and got.n == pytest.approx(667, rel=0.02), got


def test_a_one_run_request_lost_in_the_noise_does_not_ask_ten_thousand_runs():
    """attack: none, noise: the one-run requests read no longer than the overhead requests (a 0.3-0.7 ms 1x1
    convolution of light_densenet121), the run was estimated at ~0 s and 10,000 runs were asked twice, 3.5-7.5 s
    each; expect: each re-estimate asks at most MAX_GROWTH times the runs before, and the rounds still fit."""
    from leka.evaluator.calibrate import MAX_GROWTH

    clock = SimClock(5e-4)
    real = clock.__call__

    def noisy(n: int, arm: bool) -> float:
        return clock.overhead if n == 1 else real(n, arm)

    got = calibrate_side(noisy, 2.0)
    asked = [n for n, _ in clock.calls]
    assert max(asked) <= MAX_GROWTH, asked
    assert got is not None and got.n == 4 and got.per_run_s == pytest.approx(5e-4, rel=0.05), got


def test_a_failed_request_ends_calibration():
    assert calibrate_side(lambda n, arm: None if n == 1 else 1e-4, 2.0) is None


def test_the_shorter_side_is_lengthened_to_the_other_sides_round():
    sized = size_rounds(SimClock(7e-4), SimClock(0.059), min_run_ms=2.0, min_rounds=7, min_time_s=0.08)
    assert sized is not None
    cand, base = sized
    assert base.n == 1 and cand.n * cand.per_run_s == pytest.approx(0.08 / 7, rel=0.1), sized


def _reply(cs: float, bs: float, nc: int, nb: int) -> dict:
    return {"candidate_s": [cs] * 10, "baseline_s": [bs] * 10, "candidate_n": nc, "baseline_n": nb}


def test_reply_is_held_to_the_rounds_asked_and_the_parents_clock():
    asked = (SideRounds(500, 4e-6), SideRounds(600, 3.4e-6))
    honest = _reply(2e-6, 1.4e-6, 500, 600)  # dwconv as measured: reported runs ~0.45 of the clocked ones
    assert plausible(honest, 0.2, 2.0, asked=asked) is None
    # lie-runs: 1000x the runs of 1000x shorter times
    assert "500000 runs, 500 asked" in plausible(_reply(2e-9, 1.4e-6, 500_000, 600), 0.2, 2.0, asked=asked)
    # lie-scale: the runs as asked, their times divided by 1000
    lie = plausible(_reply(2e-9, 1.4e-6, 500, 600), 0.2, 2.0, asked=asked)
    assert "candidate runs of 0.002 µs reported, 4 µs each on this side's clock" in lie
    # the baseline is held to its clock too
    assert "baseline runs" in plausible(_reply(2e-6, 1e-9, 500, 600), 0.2, 2.0, asked=asked)
    # without sizes (a remote board sizes its own rounds) only the other checks apply
    assert plausible(_reply(2e-6, 1.4e-6, 500_000, 600), None, 2.0, asked=None) is None


def test_time_waiting_for_a_core_is_not_counted_as_running():
    """A calibration request's clock loses the longest wait of any one worker thread (a pool's threads wait in
    parallel, so not their sum) and this side's own wait; a thread started during the request counts whole."""
    before = Usage(cpu_s=1.0, wait_s=0.5, thread_waits=((10, 0.2), (11, 0.3)))
    after = Usage(cpu_s=1.1, wait_s=1.5, thread_waits=((10, 0.5), (11, 0.9), (12, 0.1)))
    assert (after - before).longest_wait_s == pytest.approx(0.6)
    assert time_running(1.0, before, after, own_wait_s=0.1) == pytest.approx(0.3)
    assert time_running(1.0, None, after, own_wait_s=0.0) == 1.0  # no accounting: the wall clock as it is
    assert time_running(0.5, before, after, own_wait_s=0.1) == 0.0  # never negative


def test_the_calling_threads_own_wait_is_read_from_the_kernel():
    assert own_wait_s() >= 0.0
    usage = tree_usage([os.getpid()])
    assert usage is not None and threading.get_native_id() in dict(usage.thread_waits)
    assert usage.wait_s == pytest.approx(sum(w for _, w in usage.thread_waits))
