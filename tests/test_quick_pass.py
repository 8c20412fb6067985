"""`leka optimize`'s quick pass for kernels under the share threshold: the budget split reserves its slice,
and run_quick judges the offline rules' first candidates (correct through the evaluator, or not taken)."""
from __future__ import annotations

import numpy as np
import pytest

from leka.optimize.extract import KernelSpec
from leka.optimize.profile import MIN_SEARCH_MINUTES, MIN_SHARE, QUICK_FRACTION, KernelProfile, split_budget
from leka.optimize.tune import QUICK_CANDIDATES, QuickJob, noise_floor, run_quick


def _spec(name: str = "dw") -> KernelSpec:
    """A depthwise 3x3 conv + relu kernel (NCHW, 16 channels, 16x16), as `leka optimize` extracts one."""
    from tvm import te, topi

    x = te.placeholder((1, 16, 16, 16), "float32", name="X")
    w = te.placeholder((16, 1, 3, 3), "float32", name="W")
    out = topi.nn.relu(topi.nn.depthwise_conv2d_nchw(x, w, stride=1, padding=1, dilation=1))
    func = te.create_prim_func([x, w, out]).with_attr("global_symbol", "main")
    args = [("X", (1, 16, 16, 16), "float32", "input"), ("W", (16, 1, 3, 3), "float32", "input"),
            ("out", (1, 16, 16, 16), "float32", "output")]
    return KernelSpec(f"{name}0123456789abcdef"[:16], name, [name], 1, func.script(), args)


def _profiles(shares: list[float]) -> list[KernelProfile]:
    return [KernelProfile(_spec(f"k{i}"), 1.0, share=s) for i, s in enumerate(shares)]


def test_small_kernels_get_the_quick_pass_slice():
    profs = _profiles([0.6, 0.38, 0.01, 0.01])
    split_budget(profs, "minutes=20")
    big, small = profs[:2], profs[2:]
    assert all(p.budget and not p.quick for p in big) and all(p.budget is None and p.quick for p in small)
    searched = sum(float(p.budget.split("=")[1]) for p in big)
    assert searched == pytest.approx(20 * (1 - QUICK_FRACTION))
    assert sum(p.quick_minutes for p in small) == pytest.approx(20 * QUICK_FRACTION)
    assert all(p.share < MIN_SHARE for p in small)


def test_kernels_too_small_to_search_join_the_quick_pass_with_their_minutes():
    profs = _profiles([0.85, 0.13, 0.01, 0.01])
    split_budget(profs, "minutes=5")  # 3.5 min searched: 0.13 of it is under MIN_SEARCH_MINUTES
    assert profs[0].budget and not profs[0].quick
    assert profs[1].budget is None and profs[1].quick and profs[1].quick_minutes < MIN_SEARCH_MINUTES
    assert sum(p.quick_minutes for p in profs[1:]) + float(profs[0].budget.split("=")[1]) == pytest.approx(5)


def test_no_small_kernels_no_reserve_and_quick_can_be_off():
    profs = _profiles([0.7, 0.3])
    split_budget(profs, "minutes=10")
    assert sum(float(p.budget.split("=")[1]) for p in profs) == pytest.approx(10)
    profs = _profiles([0.99, 0.01])
    split_budget(profs, "minutes=10", quick=False)
    assert profs[0].budget == "minutes=10" and not profs[1].quick
    split_budget(profs, "compiles=100")  # no time limit: the pass would spend compiles outside the budget
    assert profs[0].budget == "compiles=100" and not profs[1].quick


def test_quick_pass_judges_rule_candidates_through_the_evaluator():
    (w,) = run_quick(QuickJob([_spec()], "host-cpu", "test-run", None, minutes=None))
    judged = w.detail["candidates"]
    assert 1 <= len(judged) <= QUICK_CANDIDATES and w.method == "quick-rules"
    assert all(j.get("correct") for j in judged if "error" not in j), judged
    if w.source is not None:  # taken only as a verified winner beyond the noise
        assert w.detail["rule"] and w.speedup > w.detail["noise_floor"] >= noise_floor({})


def test_quick_pass_stops_at_its_time_limit():
    assert run_quick(QuickJob([_spec()], "host-cpu", "test-run", None, minutes=-1.0)) == []


def test_quick_pass_runs_on_until_the_whole_budget_ends():
    """After the searches the pass may use what they left: its own share spent (minutes=-1), the run's
    deadline still ahead, the kernel is judged; a deadline already past does not extend it."""
    import time

    (w,) = run_quick(QuickJob([_spec()], "host-cpu", "test-run", None, minutes=-1.0, until=time.time() + 600))
    assert w.detail["candidates"]
    assert run_quick(QuickJob([_spec()], "host-cpu", "test-run", None, minutes=-1.0, until=time.time() - 1)) == []


def _clip_spec() -> KernelSpec:
    """ReLU6 as opset-11 exporters write it: Clip with 0-d min/max tensors, params of shape () in the kernel."""
    from tvm import te

    x = te.placeholder((1, 8, 4, 4), "float32", name="X")
    lo = te.placeholder((), "float32", name="lo")
    hi = te.placeholder((), "float32", name="hi")
    out = te.compute(x.shape, lambda *i: te.min(te.max(x(*i), lo()), hi()), name="clip")
    func = te.create_prim_func([x, lo, hi, out]).with_attr("global_symbol", "main")
    args = [("X", (1, 8, 4, 4), "float32", "input"), ("lo", (), "float32", "input"),
            ("hi", (), "float32", "input"), ("clip", (1, 8, 4, 4), "float32", "output")]
    return KernelSpec("clip0123456789ab", "clip", ["clip"], 1, func.script(), args)


def test_scalar_params_keep_their_shape():
    """0-d params stay 0-d from input generation to the reference build (np.ascontiguousarray made them 1-d:
    every kernel of MobileNet v2 at opset 11 crashed in its reference)."""
    from leka.optimize.extract import make_task

    task = make_task(_clip_spec(), None)
    x, lo, hi = task.generate_inputs(np.random.default_rng(0), "normal")
    assert lo.shape == () and hi.shape == ()
    (got,) = task.reference(x, np.float32(-0.5), np.float32(0.5))
    assert np.array_equal(got, np.clip(x, -0.5, 0.5))


def test_one_kernel_failing_does_not_sink_the_quick_pass():
    broken = KernelSpec("brok0123456789ab", "broken", ["broken"], 1, "not tvmscript", list(_spec().args))
    bad, good = run_quick(QuickJob([broken, _spec()], "host-cpu", "test-run", None, minutes=None))
    assert bad.source is None and "Error" in bad.detail["error"]
    assert good.detail["candidates"] and good.kernel_key == _spec().key


def test_the_worker_memory_limit_grows_with_the_kernels_arguments(monkeypatch):
    """attack: a 0.30 GB fully connected layer (light_zfnet512) whose timing copies outgrew the worker's 8 GB
    (std::bad_alloc, recorded as "measured 0.00x", the layer left at its default build); expect: the limit grows
    with the largest kernel's arguments, never below the default, never past 3/4 of the host's memory."""
    import os
    from types import SimpleNamespace

    from leka.evaluator import EvalConfig
    from leka.optimize.tune import WORKER_GB_PER_ARG_GB, eval_config

    def spec(gb: float):
        return SimpleNamespace(args=[("w", (int(gb * 1e9 / 4),), "float32", "input")])

    base = EvalConfig().mem_limit_gb
    assert eval_config([]).mem_limit_gb == base and eval_config([spec(0.001)]).mem_limit_gb >= base
    assert eval_config([spec(0.001), spec(0.3)], measure=False).mem_limit_gb == base + WORKER_GB_PER_ARG_GB * 0.3
    assert eval_config([spec(0.3)], measure=False).measure is False
    host_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    assert eval_config([spec(100.0)]).mem_limit_gb <= max(base, 0.75 * host_gb)


class _Clocked:
    """A stand-in evaluator: every evaluation takes `step_s` on a fake clock; the kernels named in `losers` lose."""

    def __init__(self, clock: list[float], step_s: float, losers: set[str]):
        self.clock, self.step_s, self.losers, self.calls = clock, step_s, losers, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def evaluate(self, task, src):
        from types import SimpleNamespace

        self.calls.append(task.id)
        self.clock[0] += self.step_s
        lost = any(name in task.id for name in self.losers)
        res = {"correct": True, "speedup": 1.0 if lost else 5.0, "rounds": 7, "spread": 0.01,
               "baseline_spread": 0.01, "candidate_ms": 1.0, "baseline_ms": 5.0}
        return SimpleNamespace(to_json=lambda: res)


def _clocked_quick(monkeypatch, minutes: float | None, losers: set[str]):
    import time as real_time
    from types import SimpleNamespace

    import leka.executors.base as base
    import leka.optimize.tune as tune

    clock = [1000.0]
    ev = _Clocked(clock, 10.0, losers)
    monkeypatch.setattr(base, "evaluator_for", lambda *a, **k: ev)
    monkeypatch.setattr(tune, "time", SimpleNamespace(time=lambda: clock[0], monotonic=real_time.monotonic))
    specs = [_spec(f"k{i}") for i in range(3)]
    return run_quick(QuickJob(specs, "host-cpu", "test-run", None, minutes=minutes)), ev.calls


def test_quick_pass_judges_every_kernels_first_candidate_before_any_second(monkeypatch):
    """light_densenet121 (253 kernels, minutes=10): judging both candidates of each kernel in turn reached 26
    kernels, the rest kept default builds 15-100x slower; expect: the first sweep gives each kernel its first
    candidate, the second sweep the next ones, kernels whose first candidate did not win first."""
    winners, calls = _clocked_quick(monkeypatch, None, losers={"k1"})
    firsts, seconds = calls[:3], calls[3:]
    assert [c.split("-")[1] for c in firsts] == ["k0", "k1", "k2"]
    assert [c.split("-")[1] for c in seconds][0] == "k1"  # no winner yet: its next candidate comes first
    by_name = {w.task_id.split("-")[1]: w for w in winners}
    assert by_name["k1"].source is None and by_name["k0"].source is not None
    assert len(calls) == sum(len(w.detail["candidates"]) for w in winners) > 3


def test_quick_pass_out_of_time_after_the_first_sweep_keeps_each_first_verdict(monkeypatch):
    winners, calls = _clocked_quick(monkeypatch, 25 / 60, losers=set())  # 3 evaluations of 10 s: past 25 s
    assert len(calls) == 3 and len(winners) == 3
    assert all(len(w.detail["candidates"]) == 1 and w.source is not None for w in winners)
    assert all(w.detail["how"]["pass"] == "quick" for w in winners)
