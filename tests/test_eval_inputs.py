"""What the evaluator checks: fresh inputs per evaluation (seed recorded, replayable), held-back input
families whose mismatches reveal no values, the timing loop's own inputs, exactly the task's outputs
(count, shape, dtype), and integer outputs exact except on declared rounding ties."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from leka.evaluator import EvalConfig, Evaluator
from leka.evaluator.correctness import check_outputs, compare
from leka.evaluator.inputs import HELD_BACK, make_trials
from leka.tasks import get_task

CORPUS = Path(__file__).parent / "corpus"
SEED = 1234


@pytest.fixture(scope="module")
def ev():
    with Evaluator("host-cpu", EvalConfig(trials=5, measure=False, run_timeout_s=20.0)) as e:
        yield e


# -- inputs (no worker) ---------------------------------------------------------------------------------
def test_same_seed_same_inputs_fresh_seed_new_inputs():
    task, cfg = get_task("ex-softmax-512x384"), EvalConfig()
    a, b = make_trials(task, cfg, SEED, False, True), make_trials(task, cfg, SEED, True, True)
    c = make_trials(task, cfg, SEED + 1, False, True)
    for x, y in zip(a.trials, b.trials):  # the holdout flag adds trials; it changes none of the others
        assert np.array_equal(x.inputs[0], y.inputs[0]) and np.array_equal(x.refs[0], y.refs[0])
    assert not np.array_equal(a.trials[0].inputs[0], c.trials[0].inputs[0])
    assert not np.array_equal(a.timing.inputs[0], a.trials[0].inputs[0])  # timing has inputs of its own
    assert [t.label for t in b.trials[len(a.trials):]] == [HELD_BACK] * len(cfg.holdout_dists)
    assert not any(t.held_back for t in a.trials)


def test_a_task_with_big_arguments_gets_fewer_trials_and_keeps_its_held_back_ones():
    """light_vgg19's 411 MB fully connected layer spent ~90 of 126 s on its 6 input sets; a task whose
    arguments hold EvalConfig.big_args_bytes or more gets big_trials correctness trials (held-back ones and the
    timing loop's inputs as before)."""
    task = get_task("ex-softmax-512x384")
    nbytes = sum(a.nbytes for a in task.args)
    small, big = EvalConfig(big_args_bytes=nbytes + 1), EvalConfig(big_args_bytes=nbytes, big_trials=2)
    assert len(make_trials(task, small, SEED, False, True).trials) == small.trials == 5
    made = make_trials(task, big, SEED, True, True)
    assert [t.label for t in made.trials] == ["normal", "heavy"] + [HELD_BACK] * len(big.holdout_dists)
    assert made.timing is not None
    assert EvalConfig(trials=1).trials_for(1 << 40) == 1  # never more than asked


def test_made_ahead_inputs_are_fresh_and_used_once():
    from leka.evaluator.inputs import InputSource

    task, src = get_task("ex-softmax-512x384"), InputSource(EvalConfig(trials=1))
    seeds = []
    for _ in range(4):
        seed, made = src.start(task, False, False)
        assert made.result().seed == seed
        seeds.append(seed)
        src.prefetch(task, False, False)
    other, _ = src.start(get_task("ex-matmul-256"), False, False)  # another task: the set made ahead is dropped
    src.close()
    assert len(set(seeds + [other])) == 5
    pinned = InputSource(EvalConfig(trials=1, seed=SEED))
    assert {pinned.start(task, False, False)[0] for _ in range(2)} == {SEED}


def test_held_back_families_are_not_the_search_families():
    from leka.tasks.task import FLOAT_DISTS, HOLDOUT_DISTS

    assert not set(HOLDOUT_DISTS) & set(FLOAT_DISTS)
    with pytest.raises(ValueError):
        EvalConfig(dists=("laplace",))  # a search configuration cannot draw from the held-back families


def test_integer_outputs_exact_unless_on_a_declared_tie():
    exp = np.array([3, 4, 5, 6], np.int8)
    got = np.array([4, 4, 5, 7], np.int8)
    assert not compare("Y", got, exp, 0.5, 1.0).ok  # rtol/atol never loosen an integer output
    ties = np.array([True, False, False, False])
    v = compare("Y", got, exp, 0.0, 0.0, ties=ties)
    assert not v.ok and v.mismatch_count == 1 and v.mismatches[0].index == [3]
    assert compare("Y", got, exp, 0.0, 0.0, ties=np.array([True, False, False, True])).ok
    assert not compare("Y", exp + 2, exp, 0.0, 0.0, ties=np.ones(4, bool)).ok  # a tie allows 1, not 2


def test_tie_masks_come_from_the_exact_pre_rounding_value():
    task = get_task("l2-preprocess_resize_quantize_i8-240x320x96-u8")
    assert task.int_tolerance == "ties" and task.tolerance(task.outputs[0]) == (0.0, 0.0)
    x = task.generate_inputs(np.random.default_rng(0), "normal")
    (mask,) = task.tie_masks(x)
    pre = np.asarray(task.pre_rounding(*x))
    assert mask.any() and np.allclose(pre[mask] % 1.0, 0.5, atol=1e-3)
    assert get_task("ex-softmax-512x384").tie_masks([x]) == [None]


def test_output_count_shape_and_dtype_are_checked():
    task = get_task("ex-softmax-512x384")
    ref = [np.zeros((512, 384), np.float32)]
    assert "returned 0 output(s)" in check_outputs(task, [], ref, [None]).reason
    assert "returned 2 output(s)" in check_outputs(task, ref * 2, ref, [None]).reason
    assert "float64" in check_outputs(task, [ref[0].astype(np.float64)], ref, [None]).reason
    assert check_outputs(task, ref, ref, [None]).ok


# -- the evaluator ------------------------------------------------------------------------------------
def test_every_evaluation_has_a_fresh_recorded_seed(ev):
    task = get_task("ex-softmax-512x384")
    src = (CORPUS / "correct_naive.py").read_text()
    runs = [ev.evaluate(task, src) for _ in range(4)]  # from the third on, inputs are made ahead
    assert all(r.correct for r in runs) and len({r.input_seed for r in runs}) == 4
    a = runs[0]
    assert a.to_json()["input_seed"] == a.input_seed and a.holdout is False


def _memorised(task_id: str, seed: int, with_timing: bool) -> str:
    """A kernel with no arithmetic: it recognises each input set of `seed` by its first element and writes
    the stored answer (the attack on a fixed-seed evaluator)."""
    task = get_task(task_id)
    ts = make_trials(task, EvalConfig(), seed, False, True)
    table = ts.trials + ([ts.timing] if with_timing else [])
    expr = "T.float32(0.0)"
    for t in table:
        y = t.refs[0].ravel()
        ans = f"T.if_then_else(v_j == 0, T.float32({float(y[0])!r}), T.float32({float(y[1])!r}))"
        expr = f"T.if_then_else(X[0, 0] == T.float32({float(t.inputs[0][0, 0])!r}), {ans}, {expr})"
    return f'''from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(X: T.Buffer((1, 256), "float32"), W: T.Buffer((256, 2), "float32"), B: T.Buffer((2,), "float32"),
         Y: T.Buffer((1, 2), "float32")):
    T.func_attr({{"tirx.noalias": True}})
    for i, j in T.grid(1, 2):
        with T.sblock("Y"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(X[0, 0])
            T.writes(Y[v_i, v_j])
            Y[v_i, v_j] = {expr}
'''


def test_memorised_answers_fail_on_fresh_inputs_and_replay_reproduces(ev):
    task = get_task("l1-dense_bias-256x2")
    hack = _memorised(task.id, SEED, with_timing=True)
    fresh = ev.evaluate(task, hack)
    assert fresh.failure == "wrong" and fresh.correct is False, fresh.error
    with Evaluator("host-cpu", EvalConfig(seed=SEED, min_rounds=3, min_time_s=0.01)) as pinned:
        replay = pinned.evaluate(task, hack, measure=False)  # the inputs of seed SEED: the stored answers match
        assert replay.correct and replay.input_seed == SEED, replay.error
        # Stored answers for the correctness trials only: the timing loop's own inputs catch them. (On a heavily
        # loaded machine the worker's wall-clock plausibility check may reject the timing reply first: retry.)
        for _ in range(3):
            timed = pinned.evaluate(task, _memorised(task.id, SEED, with_timing=False))
            if "wall clock" not in (timed.error or ""):
                break
        assert timed.failure == "wrong" and timed.stage == "timing", (timed.status, timed.error)
        assert "outputs after the timing loop" in timed.error


def _softmax_wrong_on_quiet_rows() -> str:
    """Correct softmax except on rows whose first 32 values are nearly all (28+) within 0.2 of zero: never
    in the search's families (at most ~35 % of their values are that small), on most rows of the
    held-back `spikes` family (a quiet background with rare spikes)."""
    src = (CORPUS / "correct_naive.py").read_text()
    quiet = " + ".join(f"T.if_then_else(T.fabs(X[v_i, {k}]) < T.float32(0.2), 1, 0)" for k in range(32))
    old = "Y[v_i, v_j] = exp[v_i, v_j] / rowsum[v_i]"
    assert old in src
    return src.replace(old, f"Y[v_i, v_j] = T.if_then_else({quiet} >= 28, T.float32(0.5), exp[v_i, v_j] / rowsum[v_i])")


def test_held_back_inputs_judge_without_leaking_values(ev):
    task = get_task("ex-softmax-512x384")
    hack = _softmax_wrong_on_quiet_rows()
    assert ev.evaluate(task, hack).correct  # the search's inputs never show the flaw
    res = ev.evaluate(task, hack, holdout=True)
    assert res.failure == "wrong" and res.holdout and "held-back inputs" in res.error, res.error
    assert "got" not in res.error and "expected" not in res.error and "spikes" not in res.error
    assert res.mismatches == [] and res.mismatch_count > 0
    ok = ev.evaluate(task, (CORPUS / "correct_naive.py").read_text(), holdout=True)
    assert ok.correct and ok.trials == 5 + len(ev.config.holdout_dists)


@pytest.mark.parametrize("edit,why", [("R.tuple()", "returned 0 output(s)"), ("(gv, gv)", "returned 2 output(s)"),
                                      ('R.astype(gv, "float64")', "float64[1, 12]"),
                                      ("R.reshape(gv, R.shape([12]))", "float32[12]")])
def test_graph_outputs_exact_count_shape_dtype(ev, edit, why):
    task = get_task("l3-kws-dscnn")
    src = re.sub(r"\) -> R\.Tensor\([^)]*\)[^:]*:", "):", task.build().script(), count=1)
    assert "        return gv" in src
    res = ev.evaluate(task, src.replace("        return gv", f"        return {edit}"))
    assert res.failure == "wrong" and why in res.error, (res.status, res.error)


def test_quantiser_that_floors_instead_of_rounding_is_wrong(ev):
    from leka.compiler import default_schedule

    task = get_task("l2-preprocess_resize_quantize_i8-240x320x96-u8")
    naive = default_schedule(task.build(), ev.target, rules="naive").script()
    assert ev.evaluate(task, naive).correct
    rounding = "T.floor(rs[v_i0, v_i1, v_i2] + T.float32(0.5))"
    assert rounding in naive
    res = ev.evaluate(task, naive.replace(rounding, "T.floor(rs[v_i0, v_i1, v_i2])"))
    assert res.failure == "wrong" and res.mismatch_count > 1000, res.error
