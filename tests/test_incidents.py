"""Regression tests for the incidents the docs record. The 0-d Clip tensor of opset-11 ReLU6 (every kernel of
MobileNet v2 crashed in its reference build) is tests/test_quick_pass.py::test_scalar_params_keep_their_shape."""
from __future__ import annotations

import pytest


def test_harris_fusion_stays_far_below_the_2mb_script(monkeypatch):
    """docs/agent.md: on Harris, alg.fuse_elementwise printed a 2 MB function (Sobel stages inlined into products
    into 5x5 box sums). With the size bound some stages stay stages (the products, or the gradients and box sums):
scripts of ~30 and ~43 kB."""
    from leka.ir import CandidateIR
    from leka.proposers.offline.algorithm import fuse_elementwise
    from leka.proposers.offline.algorithm.common import MAX_SCRIPT_CHARS
    from leka.proposers.offline.context import RuleContext
    from leka.targets import get_target
    from leka.tasks import get_task

    task, target = get_task("l2-harris_response_f32-240x320"), get_target("rpi5")
    irs = fuse_elementwise.apply(RuleContext.build(task, CandidateIR.initial(task), target, []))
    assert irs and len(irs) == 2  # without and with the padding stages inlined
    for ir in irs:
        assert len(ir.to_tvmscript(target)) < min(MAX_SCRIPT_CHARS, 100_000)
        assert len(ir.apply().block_names()) >= 4  # stages stay stages, not one expression of every stencil


class _Stop(Exception):
    pass


def test_metaschedule_builds_are_not_killed_at_tvm_s_30_s(monkeypatch):
    """docs/benchmark.md: TVM's default 30 s LocalBuilder timeout killed every candidate of a 5x5 blur on this
    2-core host. The baseline asks for 120 s and the worker hands it to the builder."""
    import json

    import tvm.s_tir.meta_schedule as ms

    from baselines import metaschedule, ms_worker
    from leka.methods import MethodContext
    from leka.targets import get_target
    from leka.tasks import get_task

    asked = {}

    def capture(req, folder, timeout_s):
        asked.update(json.loads(json.dumps(req)))
        raise _Stop

    monkeypatch.setattr(metaschedule, "_worker", capture)
    ctx = MethodContext(evaluator=None, budget=None, store=None, run_id="r", options={})
    with pytest.raises(_Stop):
        metaschedule.MetaScheduleMethod({"trials": 2}).run(get_task("ex-matmul-256"), get_target("host-cpu"), ctx)
    assert asked["builder_timeout_s"] >= 120

    def builder(**kw):
        asked["builder_kw"] = kw
        raise _Stop

    monkeypatch.setattr(ms.builder, "LocalBuilder", builder)
    with pytest.raises(_Stop):
        ms_worker._tune(None, None, asked)
    assert asked["builder_kw"]["timeout_sec"] == asked["builder_timeout_s"]
