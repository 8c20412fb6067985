"""The graph against the real isolated evaluator: a compile crash, a hanging kernel and a correct one
are each a recorded step, and finalize re-measures in a fresh worker."""
from __future__ import annotations

import pytest

from leka.agent import Policy, TraceStore, drive

from test_agent_fakes import FakeIR, ScriptedProposer, make_context

HANG = '''
from tvm.script import tirx as T
@T.prim_func
def main(X: T.Buffer((512, 384), "float32"), Y: T.Buffer((512, 384), "float32")):
    T.func_attr({"global_symbol": "main", "tirx.noalias": True})
    while Y[0, 0] < T.float32(1e30):
        Y[0, 0] = Y[0, 0] * T.float32(1.0) + T.float32(0.0)
'''


@pytest.mark.slow
def test_crash_hang_and_correct_candidates_with_real_evaluator(tmp_path):
    from leka.agent.session import evaluate_fn, fresh_worker_fn
    from leka.compiler import default_schedule
    from leka.evaluator import EvalConfig, Evaluator
    from leka.targets import get_target
    from leka.tasks import get_task

    task, target = get_task("ex-softmax-512x384"), get_target("host-cpu")
    naive = default_schedule(task.build(), target, rules="naive").script()
    script = {"algorithm": [[["crash", "def main(:\n  garbage"]], [["hang", HANG]], [["naive", naive]], []],
              "schedule": [[]], "memory": [[]]}
    store = TraceStore(tmp_path / "agent.sqlite")
    cfg = EvalConfig(trials=2, run_timeout_s=4, min_rounds=3, min_time_s=0.02)
    with Evaluator(target, cfg) as ev:
        ctx = make_context("real", store, ScriptedProposer(script), evaluate_fn(ev, task, "tvm-naive"),
                           remeasure=fresh_worker_fn(target, cfg, task, "tvm-naive"))
        ctx.task, ctx.target = task, target
        ctx.initial_ir = FakeIR(source=naive).to_json()  # the unscheduled start is the naive lowering
        final = drive(ctx, store, policy=Policy(k=1, max_retries=3), checkpoint=tmp_path / "ckpt.sqlite")
    steps = store.steps("real")
    assert [s["candidates"][0]["failure"] for s in steps[:3]] == ["compile_error", "timeout", None]
    assert [s["decision"] for s in steps[:2]] == ["retry", "retry"]
    assert steps[2]["candidates"][0]["correct"] is True
    assert final["eval"]["task"] == task.id and final["correct"] is True
    assert final["speedup"] is not None and final["baseline"] == "tvm-naive"
