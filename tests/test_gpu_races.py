"""Shared-memory races TVM's barrier insertion misses (leka/compiler/races.py), without a GPU.

Issue 14: seven gpu.fused_rows candidates of the attention tasks were wrong on the H200 and right on PoCL.
Their softmax max and sum lived in shared memory: lane 0 wrote `buf[threadIdx.y]` (TVM's cross-thread
reduction writes a non-local result from one lane) and every lane read `buf[threadIdx.y]`; TVM puts no
barrier between accesses at an equal index, and PoCL runs work-items one after another, hiding the race.
"""
from __future__ import annotations

import pytest

from leka.compiler import CompileError, build
from leka.compiler.races import lowered_races
from leka.ir import CandidateIR
from leka.proposers.base import ProposalRequest
from leka.proposers.offline import OfflineProposer
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import gpu_fused_rows
from leka.remote.job import parse_candidate
from leka.targets import get_target
from leka.tasks import get_task

ATTENTION = ["l2-attention_causal-6x64x64", "l2-alibi_causal_scores_softmax-4x128x32", "l2-attention_head-4x128x32"]


def _fused_rows(task_id: str, preset: str = "cuda") -> list[CandidateIR]:
    task = get_task(task_id)
    return gpu_fused_rows.apply(RuleContext.build(task, CandidateIR.initial(task), get_target(preset), []))


def _as_before_the_fix(ir: CandidateIR) -> CandidateIR:
    """The rule's old memory layer: every per-row intermediate in shared memory once lanes share a row."""
    j = ir.to_json()
    j["memory"] = [dict(m, scope="shared") if m["op"] == "set_scope" else m for m in j["memory"]]
    return CandidateIR.from_json(j, get_task(j["task"]))


@pytest.mark.parametrize("task_id", ATTENTION)
def test_fused_rows_attention_has_no_race(task_id):
    """The slice's wrong candidates (rows x lanes 8x32, 16x16, 4x64) come out race-free: a row's max and sum
    stay in registers, where TVM's allreduce hands every lane the result."""
    laned = [ir for ir in _fused_rows(task_id) if ir.notes["knobs"]["lanes"] > 1]
    assert {ir.notes["knobs"]["lanes"] for ir in laned} >= {16, 32}
    for ir in laned:
        assert ir.validate(get_target("cuda")) == [], ir.notes["knobs"]
        assert lowered_races(ir.apply().sch.mod, get_target("cuda")) == []


def test_the_old_schedule_is_caught_before_building_and_by_the_build():
    ir = _fused_rows("l2-attention_causal-6x64x64")[0]
    assert ir.notes["knobs"]["lanes"] == 32
    old = _as_before_the_fix(ir)
    for preset in ("cuda", "opencl-pocl"):  # PoCL ran it correctly; the check does not depend on running it
        errs = old.validate(get_target(preset))
        assert any("shared-memory race" in e and "Y_probs_max_shared" in e and "threadIdx" in e for e in errs), errs
    # a TVMScript candidate (a model's, or a remote job's) meets the same check in the build
    mod = parse_candidate(ir.to_tvmscript("cuda").replace('scope="local"', 'scope="shared"'))
    with pytest.raises(CompileError, match="shared-memory race"):
        build(mod, "cuda")
    build(parse_candidate(ir.to_tvmscript("cuda")), "cuda")


@pytest.mark.parametrize("task_id", ATTENTION[:1] + ["l1-softmax_keys-4x128-f16", "ex-matmul-256",
                                                     "l1-cosine_similarity_scores-2048x384",
                                                     "l1-layernorm_lastdim-64x384-f16"])
def test_no_race_reported_for_baselines_and_proposals(task_id):
    """No false alarm on what ran correctly on the H200: TVM's naive and dlight schedules, and every
    offline proposal (shared tiles, cooperative fetches and multi-warp allreduces included)."""
    from leka.compiler import default_schedule

    task, preset = get_task(task_id), get_target("cuda")
    mods = [default_schedule(task.build(), preset, rules) for rules in ("naive", "dlight")]
    req = ProposalRequest("schedule", CandidateIR.initial(task), task, preset, [], k=6)
    props = OfflineProposer().propose(req)
    assert props
    mods += [parse_candidate(p.ir.to_tvmscript(preset)) for p in props]
    for mod in mods:
        if mod is not None:
            build(mod, preset)  # raises CompileError on a race
