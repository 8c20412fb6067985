"""Bounds inside a step (per-step deadline, task wall clock, the budget's minutes) and finalize's rule:
a blocking proposer or measurement is cut off and recorded and the run goes on; every fresh re-measure
must be correct or finalize falls back."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from leka.agent import Policy, TraceStore, drive
from leka.agent.deadline import Limits, RunClock, run_forked
from leka.budget import Budget

from test_agent_fakes import FakeEvaluator, FakeProposal, ScriptedProposer, make_context


@pytest.fixture
def store(tmp_path):
    s = TraceStore(tmp_path / "agent.sqlite")
    yield s
    s.close()


def _drive(ctx, store, tmp_path, **policy):
    return drive(ctx, store, policy=Policy(**policy), checkpoint=tmp_path / "ckpt.sqlite")


# -- finalize: every fresh re-measure must be correct ----------------------------------------------------

def _remeasures(*outcomes):
    """A fresh-worker fake answering in turn: a speedup (correct) or "wrong"."""
    it = iter(outcomes)

    def fresh(src):
        out = next(it)
        if out == "wrong":
            return {"compiled": True, "correct": False, "failure": "wrong", "error": "trial 3: 12 mismatches",
                    "speedup": None, "candidate_ms": None}
        return FakeEvaluator()(src) | {"speedup": out}
    return fresh


def test_finalize_rejects_a_candidate_wrong_on_a_later_remeasure(tmp_path, store):
    # search: s_fast 3.0x (best), s_more 1.2x; the best is correct in the first fresh run (2.0x, which
    # disagrees with 3.0x, so more runs follow) and wrong in the second: it is not reported correct
    proposer = ScriptedProposer({"schedule": [["s_fast", "s_more"], []]})
    ctx = make_context("fin-wrong", store, proposer, FakeEvaluator(), remeasure=_remeasures(2.0, "wrong", 1.2))
    final = _drive(ctx, store, tmp_path, k=2)
    assert final["correct"] is True and final["speedup"] == 1.2  # the next-best candidate, confirmed
    assert final["search_speedup"] == pytest.approx(1.2) and final["fallback"].startswith("next-best candidate")
    [rej] = final["rejected"]
    assert rej["what"] == "best" and rej["search_speedup"] == pytest.approx(3.0)
    assert rej["remeasured_speedups"] == [2.0, None] and "re-measure 2 of 2 not correct: wrong" in rej["reason"]
    assert store.get_run("fin-wrong")["final"]["rejected"] == final["rejected"]  # in the trace


def test_finalize_falls_back_to_the_initial_ir_and_reports_failure_when_nothing_confirms(tmp_path, store):
    proposer = ScriptedProposer({"schedule": [["s_fast"], []]})
    ctx = make_context("fin-base", store, proposer, FakeEvaluator(), remeasure=_remeasures("wrong", 1.0))
    final = _drive(ctx, store, tmp_path, k=1)
    assert final["correct"] is True and final["fallback"] == "initial IR (the baseline lowering)"
    assert final["best_step"] is None and final["speedup"] == 1.0
    ctx = make_context("fin-none", store, ScriptedProposer({"schedule": [["s_fast"], []]}), FakeEvaluator(),
                       remeasure=_remeasures("wrong", "wrong"))
    final = _drive(ctx, store, tmp_path, k=1)
    assert final["correct"] is False and final["speedup"] is None and len(final["rejected"]) == 2
    assert "not correct" in final["error"]


# -- deadlines inside a step -----------------------------------------------------------------------------

def _blocking_proposer(layer, ir, history, k):
    """Blocks at the algorithm layer until a cut-off is in its history; then the schedule offers s_fast."""
    if layer == "algorithm" and not any(h.get("failure") == "cut_off" for h in history):
        time.sleep(60)
    if layer == "schedule" and not ir.layers["schedule"]:
        return [FakeProposal(layer, ir.with_move(layer, "s_fast"), "try s_fast")]
    return []


def test_a_blocking_proposer_is_cut_off_and_the_run_goes_on(tmp_path, store):
    ctx = make_context("blocked", store, _blocking_proposer, FakeEvaluator())
    ctx.clock = RunClock(Limits(step_s=1.0, task_s=30.0))
    t0 = time.monotonic()
    final = _drive(ctx, store, tmp_path, k=1)
    assert time.monotonic() - t0 < 10
    steps = store.steps("blocked")
    assert steps[0]["outcome"] == "failed" and steps[0]["decision"] == "retry"
    assert steps[0]["cut_off"].startswith("step cut off after 1 s (step limit 1 s): algorithm proposer")
    assert final["correct"] is True and final["speedup"] == 3.0


def test_the_minutes_budget_holds_inside_a_step(tmp_path, store):
    def never_returns(layer, ir, history, k):
        time.sleep(60)
        return []
    budget = Budget({"minutes": 0.05})  # 3 s
    ctx = make_context("minutes", store, never_returns, FakeEvaluator(), budget=budget)
    ctx.clock = RunClock(Limits(step_s=30.0), budget)
    t0 = time.monotonic()
    final = _drive(ctx, store, tmp_path, k=1)
    assert time.monotonic() - t0 < 3.0 + 2.0  # finalize of the initial IR with a fake evaluator: instant
    assert final["stop_reason"] == "budget minutes reached inside step 1" and final["correct"] is True
    assert store.steps("minutes")[0]["outcome"] == "budget"


def test_a_measurement_past_the_deadline_is_cut_off(tmp_path, store):
    cancelled = []
    ctx = make_context("slow-eval", store, ScriptedProposer({"schedule": [["s_fast"]]}),
                       FakeEvaluator(delay_s=3.0), remeasure=FakeEvaluator())
    ctx.clock, ctx.cancel = RunClock(Limits(step_s=1.0, task_s=30.0)), lambda: cancelled.append(1)
    t0 = time.monotonic()
    final = _drive(ctx, store, tmp_path, k=1)
    assert time.monotonic() - t0 < 8
    step = next(s for s in store.steps("slow-eval") if s["candidates"])
    assert step["candidates"][0]["failure"] == "cut_off" and cancelled
    assert "measurement of candidate 0" in step["cut_off"]
    assert final["correct"] is True and final["best_step"] is None  # nothing accepted: the initial IR


def test_the_cut_off_names_the_rule_and_its_history_entry_skips_it(monkeypatch):
    from leka.agent.nodes import feedback_history
    from leka.proposers.offline import _origin
    from leka.proposers.offline.algorithm import fuse_elementwise

    monkeypatch.setattr(fuse_elementwise, "fuse", lambda ctx, padding: time.sleep(60))
    got = run_forked(lambda emit: (emit({"kind": "phase", "what": "algorithm proposer"}),
                                   fuse_elementwise.apply(None)), time.monotonic() + 1.0)
    assert got.cut_off == "algorithm proposer: algorithm rewrite alg.fuse_elementwise"
    assert got.cut_off_rule == "alg.fuse_elementwise" and got.of_kind("phase")
    step = {"layer": "algorithm", "candidates": [], "cut_off": got.cut_off, "cut_off_rule": got.cut_off_rule}
    [entry] = feedback_history([step], 10)
    assert _origin(entry) == ("alg.fuse_elementwise", {}) and entry["failure"] == "cut_off"


def test_an_exponentially_growing_expression_walk_is_cut_off():
    from tvm import tirx

    from leka.proposers.offline.algorithm.common import map_expr

    def grow(emit):
        x = tirx.Var("x", "float32")
        for _ in range(64):  # a DAG of 64 nodes, a tree of 2**64: walking it as a tree never ends
            x = x + x
        emit({"kind": "phase", "what": "rewriting"})
        map_expr(x, lambda e: None)
    t0 = time.monotonic()
    got = run_forked(grow, time.monotonic() + 1.5)
    assert got.cut_off is not None and got.cut_off.startswith("rewriting") and time.monotonic() - t0 < 4


def test_the_cut_off_kills_what_the_child_started():
    def spawn_and_block(emit):
        proc = subprocess.Popen(["sleep", "60"])
        emit({"kind": "pid", "pid": proc.pid})
        time.sleep(60)
    got = run_forked(spawn_and_block, time.monotonic() + 1.0)
    [msg] = got.of_kind("pid")
    for _ in range(40):
        try:
            os.kill(msg["pid"], 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the child's subprocess outlived the cut-off")


def test_limits_from_the_budget():
    clock = RunClock(Limits(), Budget.parse("minutes=4"))
    assert (clock.task_s, clock.step_s, clock.reserve_s) == (300.0, 75.0, 60.0)
    assert RunClock(Limits()).task_s == 1800.0 and RunClock(Limits()).step_s == 120.0
    assert RunClock(Limits(step_s=5, task_s=20)).step_deadline()[1] == "step limit 5 s"
    from leka.errors import LekaError
    with pytest.raises(LekaError, match="step limit must be > 0"):
        Limits(step_s=0)


def test_finalize_remeasures_on_held_back_inputs_in_a_fresh_worker(monkeypatch):
    import leka.evaluator
    from leka.agent.session import fresh_worker_fn
    from leka.evaluator import EvalConfig

    made = []

    class Recorder:
        def __init__(self, target, config):
            made.append(config)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def evaluate(self, task, source, baseline):
            return type("R", (), {"to_json": lambda self: {"correct": True}})()
    monkeypatch.setattr(leka.evaluator, "Evaluator", Recorder)
    fresh = fresh_worker_fn("host-cpu", EvalConfig(trials=3), object(), "tvm-naive")
    fresh("src"), fresh("src")
    assert len(made) == 2 and all(c.holdout and c.seed is None and c.trials == 3 for c in made)


def test_finalize_drops_a_best_that_is_slower_than_the_baseline_on_fresh_remeasures(tmp_path, store):
    # search: s_fast 3.0x; in fresh workers 0.4x, then 0.45x and 0.5x (disagreement): slower than the naive
    # lowering beyond noise, so the initial IR (1.0x fresh) is the answer and the rejection says why
    proposer = ScriptedProposer({"schedule": [["s_fast"], []]})
    ctx = make_context("fin-slow", store, proposer, FakeEvaluator(), remeasure=_remeasures(0.4, 0.45, 0.5, 1.0))
    final = _drive(ctx, store, tmp_path, k=1)
    assert final["correct"] is True and final["speedup"] == 1.0
    assert final["fallback"] == "initial IR (the baseline lowering)"
    [rej] = final["rejected"]
    assert rej["what"] == "best" and "slower than the baseline lowering beyond noise (0.45x" in rej["reason"]


def test_finalize_keeps_a_slower_best_when_nothing_else_confirms(tmp_path, store):
    proposer = ScriptedProposer({"schedule": [["s_fast"], []]})
    ctx = make_context("fin-slow-kept", store, proposer, FakeEvaluator(),
                       remeasure=_remeasures(0.4, 0.45, 0.5, "wrong"))
    final = _drive(ctx, store, tmp_path, k=1)
    assert final["correct"] is True and final["speedup"] == 0.45 and final["best_step"] is not None
    assert [r["what"] for r in final["rejected"]] == ["initial IR (the baseline lowering)"]


def test_is_slower_needs_the_whole_noise_band_below_one():
    from leka.bench import metrics

    rounds = lambda c, b: {"detail": {"timing": {"candidate": {"rounds_s": c}, "baseline": {"rounds_s": b}}}}  # noqa: E731
    slow = {"compiled": True, "correct": True, "speedup": 0.5} | rounds([2.0] * 9, [1.0] * 9)
    noisy = {"compiled": True, "correct": True, "speedup": 0.9} | rounds([1.0, 1.2, 0.8, 1.1, 1.3, 0.9, 1.0, 1.15, 0.85], [1.0] * 9)
    assert metrics.is_slower(slow) and not metrics.is_slower(noisy)
    assert not metrics.is_slower({"correct": False, "speedup": 0.1})


def test_a_slow_models_two_calls_fit_the_default_step():
    """The default step grows to fit a slow local model's reply and its one feedback (from the server's
    measured speed); an explicit --step-limit stays as given; a proposer without a speed is unchanged."""
    from leka.agent.session import STEP_WORK_S, sized_for_model

    class SlowClient:
        def limits(self, call_seconds=None):
            return {"seconds_per_call": 125.0, "max_tokens": 300}

    class Proposer:
        client = SlowClient()

    assert sized_for_model(Limits(), Proposer()).step_seconds(240) == 2 * 125.0 + STEP_WORK_S
    assert sized_for_model(Limits(step_s=20.0), Proposer()).step_seconds(240) == 20.0
    assert sized_for_model(Limits(), object()).step_seconds(240) == Limits().step_seconds(240) == 60.0


def test_the_child_never_finalises_what_this_process_left_as_garbage():
    """A garbage SQLite Connection finalised in a forked child waited forever on SQLite's mutex, held by another
    thread at the fork (`leka remote ingest`). Here a lock held at the fork stands for that mutex and a
    collectable cycle whose finaliser takes it for the Connection: the child's collection must not reach it."""
    import gc
    import threading

    held = threading.Lock()

    class Finalised:
        def __del__(self):
            with held:
                pass

    gc.disable()  # the cycle must still be garbage at the fork, not collected here first
    try:
        held.acquire()
        cycle = Finalised()
        cycle.me = cycle
        del cycle
        got = run_forked(lambda emit: (gc.collect(), emit({"kind": "collected"})), time.monotonic() + 5.0)
    finally:
        held.release()
        gc.enable()
        gc.collect()
    assert got.cut_off is None and got.of_kind("collected")
