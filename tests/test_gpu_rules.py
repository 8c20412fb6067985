"""The GPU offline rules: each applies or declines, every proposal builds for cuda (sm_90) and Jetson (sm_87)
and is correct where it really runs here (OpenCL on PoCL, the same rules)."""
from __future__ import annotations

import pytest

from leka.compiler import build
from leka.evaluator import EvalConfig, Evaluator
from leka.ir import CandidateIR
from leka.proposers.base import ProposalRequest
from leka.proposers.offline import OfflineProposer
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import (gpu_cross_thread_reduction, gpu_shared_matmul,
                                          gpu_vector_elementwise)
from leka.remote.job import parse_candidate
from leka.targets import get_target
from leka.tasks import get_task

TASKS = ["l1-softmax_keys-4x128-f16", "l1-layernorm_lastdim-64x384-f16", "l1-relu6-7x7x960-f16",
         "l1-gemv-1024x1024-f16", "ex-matmul-256"]


def _proposals(task_id: str, target: str, k: int = 6):
    task = get_task(task_id)
    req = ProposalRequest("schedule", CandidateIR.initial(task), task, get_target(target), [], k=k)
    return task, OfflineProposer().propose(req)


@pytest.mark.parametrize("task_id", TASKS)
def test_gpu_proposals_build_for_cuda_and_jetson(task_id):
    for preset in ("cuda", "jetson-orin-nano"):
        task, props = _proposals(task_id, preset)
        assert props, f"no GPU proposal for {task_id}"
        for p in props:
            build(parse_candidate(p.ir.to_tvmscript(preset)), preset)


def test_rules_decline_what_is_not_theirs():
    def ctx(task_id, target="cuda"):
        task = get_task(task_id)
        return RuleContext.build(task, CandidateIR.initial(task), get_target(target), [])
    assert gpu_cross_thread_reduction.apply(ctx("l1-relu6-7x7x960-f16")) is None  # no reduction
    assert gpu_vector_elementwise.apply(ctx("l1-gemv-1024x1024-f16")) is None  # no spatial-only block
    assert gpu_shared_matmul.apply(ctx("l1-softmax_keys-4x128-f16")) is None
    assert gpu_cross_thread_reduction.apply(ctx("l1-softmax_keys-4x128-f16", "host-cpu")) is None


# PoCL here has no half precision: the fp32 shapes of the same patterns (+ pooling, + a residual add)
POCL_TASKS = ["l1-layernorm_lastdim-64x384", "l1-relu6-14x14x384", "l1-gemv-512x512",
              "l1-global_avgpool_nhwc-7x7x1280", "l1-add_residual_nhwc-14x14x96", "ex-softmax-512x384", "ex-matmul-256"]


@pytest.mark.slow
@pytest.mark.parametrize("task_id", POCL_TASKS)
def test_gpu_proposals_correct_on_pocl(task_id):
    task, props = _proposals(task_id, "opencl-pocl", k=4)
    rules = set()
    with Evaluator("opencl-pocl", EvalConfig(trials=2, measure=False, seed=0)) as ev:
        for p in props:
            res = ev.evaluate(task, p.ir.to_tvmscript("opencl-pocl"))
            assert res.correct, (p.rationale, res.failure, res.error)
            rules.add(p.meta["rule"])
    assert rules


def test_limits_are_checked_before_building():
    """A 32x32 thread tile (1024 threads) is over Mali's 256 threads per block: validate() names the limit
    (the proposer drops such IRs before anything is built); the same IR is valid for cuda."""
    task = get_task("ex-matmul-256")
    ctx = RuleContext.build(task, CandidateIR.initial(task), get_target("mali-g610"), [])

    def wide(sk):
        i, j, k = sk.loops(ctx.infos[0].name)
        i0, i1 = sk.do("split", loop=i, factors=[None, 32])
        j0, j1 = sk.do("split", loop=j, factors=[None, 32])
        sk.do("reorder", loops=[i0, j0, i1, j1, k])
        sk.do("bind", loop=i0, thread="blockIdx.y")
        sk.do("bind", loop=j0, thread="blockIdx.x")
        sk.do("bind", loop=i1, thread="threadIdx.y")
        sk.do("bind", loop=j1, thread="threadIdx.x")
    ir = ctx.attempt("test", {}, wide)
    errs = ir.validate(get_target("mali-g610"))
    assert any("max_threads_per_block 256" in e for e in errs)
    assert not ir.validate(get_target("cuda"))
