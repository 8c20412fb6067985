"""Drive the LEKA graph with a scripted proposer and a fake evaluator through every edge."""
from __future__ import annotations

import pytest

from leka.agent import Policy, TraceStore, contributions, decide, drive
from leka.agent.state import initial_state

from test_agent_fakes import FakeEvaluator, FakeIR, ScriptedProposer, make_context


@pytest.fixture()
def store(tmp_path):
    s = TraceStore(tmp_path / "agent.sqlite")
    yield s
    s.close()


# Every edge in one run:
#   algorithm: invalid -> retry; a_fast (2x) continue; two stalls -> advance
#   schedule:  s_fast (3x) continue; nothing new -> backtrack to algorithm
#   algorithm: nothing new -> (schedule exhausted) advance to memory
#   memory:    m_fast (1.5x) continue; nothing new -> every layer exhausted -> stop -> finalize
FULL_SCRIPT = {
    "algorithm": [["bad_tile"], ["a_fast", "a_slow"], ["a_same"], ["a_same2"], []],
    "schedule": [["s_fast"], []],
    "memory": [["m_fast"], []],
}


def _run(tmp_path, store, script, policy=Policy(k=2, plateau_pct=3.0, plateau_steps=2), evaluator=None,
         budget=None, run_id="r1"):
    proposer = ScriptedProposer(script)
    evaluator = evaluator or FakeEvaluator()
    remeasured = []

    def remeasure(src):
        remeasured.append(src)
        return evaluator(src)

    ctx = make_context(run_id, store, proposer, evaluator, budget=budget, remeasure=remeasure)
    final = drive(ctx, store, policy=policy, checkpoint=tmp_path / "ckpt.sqlite")
    return final, store.steps(run_id), proposer, evaluator, remeasured


def test_every_edge_and_finalize(tmp_path, store):
    final, steps, proposer, evaluator, remeasured = _run(tmp_path, store, FULL_SCRIPT)
    route = [(s["layer"], s["outcome"], s["decision"], s["next"]) for s in steps]
    assert route == [
        ("algorithm", "failed", "retry", "algorithm"),
        ("algorithm", "improved", "continue", "algorithm"),
        ("algorithm", "no_gain", "continue", "algorithm"),
        ("algorithm", "no_gain", "advance", "schedule"),
        ("schedule", "improved", "continue", "schedule"),
        ("schedule", "exhausted", "backtrack", "algorithm"),
        ("algorithm", "exhausted", "advance", "memory"),
        ("memory", "improved", "continue", "memory"),
        ("memory", "exhausted", "stop", "finalize"),
    ]
    # The invalid proposal was recorded with its reason and fed back to the next proposer call.
    assert steps[0]["candidates"][0]["failure"] == "invalid"
    assert "rejected by validate" in steps[0]["candidates"][0]["error"]
    assert any(h["failure"] == "invalid" for h in proposer.histories[1])
    # a_same (1.01x) was accepted but counted as a stall (< 3 %).
    assert steps[2]["accepted"] == 0 and steps[2]["best_after"] == pytest.approx(2.02)
    # Finalize re-measured the best IR (a_fast, a_same, s_fast, m_fast) once, in its own call.
    assert len(remeasured) == 1 and final["correct"] is True
    assert final["speedup"] == pytest.approx(2.0 * 1.01 * 3.0 * 1.5)
    assert final["best_layer"] == "memory" and final["stop_reason"] == "every layer exhausted"
    contrib = final["contributions"]["by_layer"]
    assert contrib["algorithm"] == pytest.approx(2.02) and contrib["schedule"] == pytest.approx(3.0)
    assert contrib["memory"] == pytest.approx(1.5)
    assert store.get_run("r1")["status"] == "done"


def test_failures_are_recorded_steps_and_run_goes_on(tmp_path, store):
    # garbage reply, compile crash, hanging candidate, segfault, wrong result: each a recorded step.
    script = {"algorithm": ["GARBAGE", ["crash_ptr"], ["hang_loop"], ["a_fast"], []],
              "schedule": [["segv_vec", "wrong_idx"], ["s_fast"], []], "memory": [["noapply_cache"], []]}
    # control=False: both scripted schedule moves in one step (no control proposal takes a slot)
    final, steps, *_ = _run(tmp_path, store, script, Policy(k=2, max_retries=3, control=False))
    outcomes = [(s["layer"], s["outcome"]) for s in steps]
    assert outcomes[:4] == [("algorithm", "bad_reply"), ("algorithm", "failed"), ("algorithm", "failed"),
                            ("algorithm", "improved")]
    assert "could not parse" in steps[0]["error"]
    assert steps[1]["candidates"][0]["failure"] == "compile_error"
    assert steps[2]["candidates"][0]["failure"] == "timeout"
    sched = [s for s in steps if s["layer"] == "schedule"]
    assert [c["failure"] for c in sched[0]["candidates"]] == ["crash", "wrong"]
    mem = [s for s in steps if s["layer"] == "memory"]
    assert mem[0]["candidates"][0]["failure"] == "invalid" and "cannot apply" in mem[0]["candidates"][0]["error"]
    assert final["correct"] and final["speedup"] == pytest.approx(6.0)


def test_retries_run_out_then_layer_is_given_up(tmp_path, store):
    script = {"algorithm": [["bad1"], ["bad2"], ["bad3"], ["a_fast"]], "schedule": [["s_fast"], []],
              "memory": [[]]}
    final, steps, proposer, *_ = _run(tmp_path, store, script, Policy(k=1, max_retries=2))
    assert [s["decision"] for s in steps[:3]] == ["retry", "retry", "advance"]
    assert "no correct candidate in 3 steps" in steps[2]["reason"]
    assert proposer.calls["algorithm"] == 3 and final["speedup"] == pytest.approx(3.0)


def test_budget_stop_then_finalize(tmp_path, store):
    from leka.budget import Budget

    budget = Budget.parse("compiles=3,measurements=10")
    script = {"algorithm": [["a_fast", "a_slow"], ["a_same", "a_same2"], ["a_x"]]}
    final, steps, proposer, evaluator, remeasured = _run(tmp_path, store, script, budget=budget)
    assert len(evaluator.calls) == 3 + 1  # three charged evaluations, then finalize's re-measure
    assert steps[-1]["decision"] == "stop" and "compiles" in steps[-1]["reason"]
    assert steps[-1]["candidates"][-1]["failure"] == "budget"
    assert final["budget_spent"]["compiles"] == 3 and final["correct"]
    assert proposer.calls["algorithm"] == 2


def test_step_cap_and_duplicates(tmp_path, store):
    # a_slow is not accepted, so the second a_slow rebuilds an IR already evaluated: nothing new.
    script = {"algorithm": [["a_slow"], ["a_slow"]], "schedule": [["s_fast"]] + [["s_x%d" % i] for i in range(10)]}
    final, steps, *_ = _run(tmp_path, store, script, Policy(k=1, max_steps=4, plateau_steps=50))
    assert steps[1]["outcome"] == "exhausted" and steps[1]["candidates"][0]["failure"] == "duplicate"
    assert steps[1]["decision"] == "advance"
    assert len(steps) == 4 and steps[-1]["decision"] == "stop" and "step cap" in steps[-1]["reason"]


def test_decide_is_pure_and_starts_at_algorithm():
    st = initial_state("r", "t", "host-cpu", "p", Policy(), FakeIR().to_json())
    assert decide(st)["next"] == "algorithm"
    st["stop_reason"] = "budget: x"
    assert decide(st) == {"decision": "stop", "next": "finalize", "reason": "budget: x"}


def test_contributions_multiply_to_total():
    steps = [{"step": 1, "layer": "algorithm", "accepted": 0, "best_before": 1.0, "best_after": 2.0,
              "candidates": [{"summary": "a"}]},
             {"step": 2, "layer": "schedule", "accepted": None, "best_before": 2.0, "best_after": 2.0,
              "candidates": []},
             {"step": 3, "layer": "schedule", "accepted": 0, "best_before": 2.0, "best_after": 5.0,
              "candidates": [{"summary": "s"}]}]
    c = contributions(steps)
    assert c["by_layer"] == {"algorithm": 2.0, "schedule": 2.5, "memory": 1.0}
    assert c["total"] == pytest.approx(5.0) and [p["step"] for p in c["path"]] == [1, 3]


def test_finalize_remeasures_when_fresh_worker_disagrees(tmp_path, store):
    class NoisyRemeasure:
        def __init__(self):
            self.speedups = iter([0.05, 5.5, 6.2])  # first fresh run hit by noise

        def __call__(self, src):
            res = FakeEvaluator()(src)
            res["speedup"] = next(self.speedups)
            return res

    proposer = ScriptedProposer({"schedule": [["s_fast", "s_more"], []]})
    ctx = make_context("noisy", store, proposer, FakeEvaluator(), remeasure=NoisyRemeasure())
    final = drive(ctx, store, policy=Policy(k=2), checkpoint=tmp_path / "ckpt.sqlite")
    assert final["search_speedup"] == pytest.approx(3.0)
    assert final["remeasured_speedups"] == [0.05, 5.5, 6.2] and final["speedup"] == 5.5


@pytest.mark.parametrize("first,remeasured", [(2.0, [2.0, 3.1, 2.9]), (2.6, [2.6])])
def test_finalize_remeasure_threshold(tmp_path, store, first, remeasured):
    """1.5x apart (3.0 in the search, 2.0 fresh) is re-measured (median reported); 1.15x apart is not."""
    runs = iter([first, 3.1, 2.9])

    def fresh(src):
        return FakeEvaluator()(src) | {"speedup": next(runs)}

    proposer = ScriptedProposer({"schedule": [["s_fast"], []]})
    ctx = make_context(f"thr{first}", store, proposer, FakeEvaluator(), remeasure=fresh)
    final = drive(ctx, store, policy=Policy(k=2), checkpoint=tmp_path / "ckpt.sqlite")
    assert final["search_speedup"] == pytest.approx(3.0)
    assert final["remeasured_speedups"] == remeasured
    assert final["speedup"] == sorted(remeasured)[len(remeasured) // 2]


def test_initial_ir_that_does_not_flatten_accepts_first_correct_kernel(tmp_path, store):
    # On a GPU target the unscheduled IR is no kernel (unbound blocks): a 0.8x kernel is still progress.
    script = {"schedule": [["bind_slow"], []]}
    ctx = make_context("gpu", store, ScriptedProposer(script), FakeEvaluator({"bind_slow": 0.8}))
    ctx.initial_ir = FakeIR({"algorithm": ["needs_schedule"]}).to_json()
    final = drive(ctx, store, policy=Policy(k=1), checkpoint=tmp_path / "ckpt.sqlite")
    steps = store.steps("gpu")
    accepted = [s for s in steps if s["accepted"] is not None]
    assert len(accepted) == 1 and accepted[0]["best_before"] == 0.0 and accepted[0]["best_after"] == 0.8
    assert final["correct"] and final["speedup"] == pytest.approx(0.8)
    assert final["contributions"]["by_layer"]["schedule"] == pytest.approx(0.8)


@pytest.mark.parametrize("factor", [0.8, 1.5])
def test_a_gpu_run_starts_from_its_floor_and_never_ships_below_it(tmp_path, store, factor):
    # With a floor (dlight's kernel: 1x against itself) a slower kernel is not progress: the run ships the
    # floor, not measured again (a remote round saved); a faster one is accepted, re-measured and shipped.
    floor_src = FakeIR({"schedule": ["dlight"]}).to_tvmscript(None)
    evaluator = FakeEvaluator({"bind": factor})
    ctx = make_context(f"gpu{factor}", store, ScriptedProposer({"schedule": [["bind"], []]}), evaluator)
    ctx.initial_ir = FakeIR({"algorithm": ["needs_schedule"]}).to_json()
    ctx.floor = lambda: floor_src
    final = drive(ctx, store, policy=Policy(k=1), checkpoint=tmp_path / "ckpt.sqlite")
    steps = store.steps(f"gpu{factor}")
    assert steps[0]["best_before"] == 1.0
    assert final["correct"] and final["speedup"] == pytest.approx(max(factor, 1.0))
    assert final["floor"] == (factor < 1.0) and floor_src not in evaluator.calls
    assert len(evaluator.calls) == (1 if factor < 1.0 else 2)  # the search's one, + the winner's re-measure


@pytest.mark.parametrize("factor", [0.8, 1.5])
def test_a_launch_bound_run_with_no_headroom_stops_after_one_step(tmp_path, store, factor):
    # The fake baseline takes 10 ms: under no_headroom_ms=20 it is "launch-bound"; a run that beat nothing
    # in its first step stops there (no further GPU round), one that did goes on.
    ctx = make_context(f"nh{factor}", store, ScriptedProposer({"schedule": [["bind"], ["s_more"], []]}),
                       FakeEvaluator({"bind": factor}))
    ctx.initial_ir = FakeIR({"algorithm": ["needs_schedule"]}).to_json()
    ctx.floor = lambda: FakeIR({"schedule": ["dlight"]}).to_tvmscript(None)
    final = drive(ctx, store, policy=Policy(k=1, layers=("schedule",), no_headroom_ms=20.0),
                  checkpoint=tmp_path / "ckpt.sqlite")
    if factor < 1.0:
        assert final["steps"] == 1 and final["stop_reason"].startswith("no headroom") and final["floor"]
    else:
        assert final["steps"] > 1 and final["speedup"] > 1.5


def test_enabling_rewrite_becomes_the_base_for_the_layers_below(tmp_path, store):
    """A correct algorithm rewrite that is not faster alone (0.9x: padding costs a little) but within
    ENABLING_MIN becomes the base: the schedule layer builds on it (the first such rewrite in the
    proposer's order, not the fastest), the best stays the answer, and the trace credits the rewrite with
    its own ratio and the schedule with the rest."""
    script = {"algorithm": [["a_pad", "a_fuse"], ["a_more"], []], "schedule": [["s_tile"], []], "memory": [[]]}
    factors = {"a_pad": 0.9, "a_fuse": 0.95, "a_more": 0.92, "s_tile": 10.0}
    final, steps, proposer, _, _ = _run(tmp_path, store, script, evaluator=FakeEvaluator(factors))
    assert steps[0]["base"] == 0 and steps[0]["accepted"] is None and steps[0]["best_after"] == 1.0
    assert steps[1]["base"] is None  # set once: a later neutral rewrite on top does not replace it
    assert final["best_ir"]["layers"]["algorithm"] == ["a_pad"] and final["best_ir"]["layers"]["schedule"] == ["s_tile"]
    assert final["speedup"] == pytest.approx(9.0)
    contrib = final["contributions"]
    assert [p["kind"] for p in contrib["path"]] == ["base", "accepted"]
    assert contrib["by_layer"]["algorithm"] == pytest.approx(0.9)
    assert contrib["by_layer"]["schedule"] == pytest.approx(10.0)
    assert contrib["total"] == pytest.approx(final["speedup"])


def test_first_schedule_step_on_a_rewrite_also_schedules_the_task_algorithm(tmp_path, store):
    """A rewrite that wins a little alone (split-K 1.1x) is accepted, but its schedules may be worse
    than those of the task's own algorithm: the first schedule step asks k-1 proposals on the rewrite
    and one on the initial IR (a control). The control wins here, becomes the best, and the trace
    restarts from the initial IR (the rewrite is not in the answer)."""
    script = {"algorithm": [["a_split"], []], "schedule": [["s_on_split"], ["s_tile"], []], "memory": [[]]}
    factors = {"a_split": 1.1, "s_on_split": 1.5, "s_tile": 4.0}
    final, steps, proposer, _, _ = _run(tmp_path, store, script, evaluator=FakeEvaluator(factors))
    sched = next(s for s in steps if s["layer"] == "schedule")
    assert [c.get("control", False) for c in sched["candidates"]] == [False, True]
    assert final["best_ir"]["layers"] == {"algorithm": [], "schedule": ["s_tile"], "memory": []}
    assert final["speedup"] == pytest.approx(4.0)
    contrib = final["contributions"]
    assert [(p["layer"], p["ratio"]) for p in contrib["path"]] == [("schedule", pytest.approx(4.0))]
    assert contrib["by_layer"]["algorithm"] == 1.0 and contrib["total"] == pytest.approx(4.0)
    later = [s for s in steps if s["layer"] == "schedule"][1:]
    assert not any(c.get("control") for s in later for c in s["candidates"])  # once per run
