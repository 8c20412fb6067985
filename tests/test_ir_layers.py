"""Layered IR: validation messages (exact), application, JSON round trip, diff, summary, flat form."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from leka.ir import CandidateIR, IRApplyError, IRFormatError, ScheduleLayer
from leka.tasks import get_task

MATMUL_SCHEDULE = [
    {"op": "split", "loop": "C.i", "factors": [None, 8]},
    {"op": "split", "loop": "C.j", "factors": [None, 32]},
    {"op": "reorder", "loops": ["C.i.0", "C.j.0", "C.k", "C.i.1", "C.j.1"]},
    {"op": "fuse", "loops": ["C.i.0", "C.j.0"]},
    {"op": "parallel", "loop": "C.i.0+C.j.0"},
    {"op": "split", "loop": "C.j.1", "factors": [None, 16]},
    {"op": "vectorize", "loop": "C.j.1.1"},
    {"op": "decompose_reduction", "block": "C", "loop": "C.k"},
]
MATMUL_MEMORY = [{"op": "cache_write", "block": "C", "buffer": 0, "scope": "global", "at": "C.i.0+C.j.0",
                  "after": 4}]


@pytest.fixture(scope="module")
def matmul():
    return get_task("ex-matmul-256")


def _ir(task, sched=(), mem=()):
    return CandidateIR.initial(task).with_layer("schedule", list(sched)).with_layer("memory", list(mem))


def test_valid_candidate_applies_and_names_loops(matmul):
    ir = _ir(matmul, MATMUL_SCHEDULE, MATMUL_MEMORY)
    assert ir.validate("host-cpu") == []
    live = ir.apply()
    assert live.loops_of("C_update") == ["C.i.0+C.j.0", "C.k", "C.i.1", "C.j.1.0", "C.j.1.1"]
    assert set(live.block_names()) == {"C_init", "C_update", "C_global"}
    assert "C.j.1.1(16 vectorized)" in ir.summary()


@pytest.mark.parametrize("steps, message", [
    ([{"op": "split", "loop": "C.j", "factors": [None, 7]}],
     "schedule step 0 split(C.j, factors=[None, 7]): loop C.j has extent 256; split factor 7 does not divide it"),
    ([{"op": "split", "loop": "C.j", "factors": [3, 5]}],
     "schedule step 0 split(C.j, factors=[3, 5]): loop C.j has extent 256; split factors [3, 5] multiply to 15, "
     "not 256"),
    ([{"op": "parallel", "loop": "C.x"}],
     "schedule step 0 parallel(C.x): no loop named 'C.x'; loops of block C: C.i, C.j, C.k"),
    ([{"op": "vectorize", "loop": "C.k"}],
     "schedule step 0 vectorize(C.k): loop C.k is a reduction loop of block C; vectorize needs a spatial loop"),
    ([{"op": "compute_inline", "block": "D"}],
     "schedule step 0 compute_inline(D): no block named 'D'; blocks: C"),
])
def test_schedule_validation_messages(matmul, steps, message):
    assert _ir(matmul, steps).validate("host-cpu") == [message]


@pytest.mark.parametrize("steps, message", [
    ([{"op": "tile", "loop": "C.i"}], "schedule step 0: unknown op 'tile'; this layer allows: split, fuse, reorder"),
    ([{"op": "split", "loop": "C.i"}], "schedule step 0 (split): missing field 'factors'"),
    ([{"op": "split", "loop": "C.i", "factors": [None, 0]}],
     "schedule step 0 (split): split factor 0 must be a positive integer"),
    ([{"op": "bind", "loop": "C.i", "thread": "warp.x"}], "schedule step 0 (bind): thread 'warp.x' is not one of"),
])
def test_schedule_format_messages(matmul, steps, message):
    with pytest.raises(IRFormatError) as e:
        _ir(matmul, steps)
    assert str(e.value).startswith(message)


def test_memory_validation_messages(matmul):
    bad_index = [{"op": "cache_read", "block": "C", "buffer": 5, "scope": "shared", "at": None, "after": None}]
    assert _ir(matmul, [], bad_index).validate("host-cpu") == [
        "memory step 0 cache_read(C, buffer=5, scope=shared, at=None): block C reads 2 buffer(s); "
        "buffer index 5 is out of range"]
    late = [{"op": "cache_write", "block": "C", "buffer": 0, "scope": "global", "after": 3}]
    assert _ir(matmul, MATMUL_SCHEDULE[:1], late).validate("host-cpu") == [
        "memory step 0 cache_write(C, buffer=0, scope=global, at=None, after=3): 'after' = 3 but the schedule "
        "has only 1 step(s)"]
    with pytest.raises(IRFormatError, match="scope 'texture' is not one of global, shared, shared.dyn, local"):
        _ir(matmul, [], [{"op": "set_scope", "block": "C", "buffer": 0, "scope": "texture"}])


def test_memory_budget_is_checked(matmul):
    small = dataclasses.replace(matmul, memory_budget_bytes=600_000)
    msgs = _ir(small, MATMUL_SCHEDULE, MATMUL_MEMORY).validate("host-cpu")
    assert msgs == ["estimated memory footprint 787456 bytes (arguments 786432 + intermediates 1024) exceeds the "
                    "memory budget of 600000 bytes"]


def test_gpu_target_requires_bound_blocks(matmul):
    assert _ir(matmul).validate("cuda") == [
        "block(s) C have no loop bound to blockIdx/threadIdx; on a GPU target every block must be bound "
        "(bind an outer loop to blockIdx.x and an inner one to threadIdx.x)"]


def test_json_round_trip_hash_and_diff(matmul):
    ir = _ir(matmul, MATMUL_SCHEDULE, MATMUL_MEMORY).with_notes(rule="hand", knobs={"ti": 8})
    back = CandidateIR.from_json(ir.to_json(), task=matmul)
    assert back == ir and back.hash() == ir.hash() and back.to_json() == ir.to_json()
    assert ir.diff(back) == ""
    other = ir.with_layer("schedule", MATMUL_SCHEDULE[:-1])
    d = ir.diff(other)
    assert "-7: decompose_reduction(C, C.k)" in d and other.hash() != ir.hash()
    assert ScheduleLayer.from_json({"steps": MATMUL_SCHEDULE}) == ir.schedule


def test_flat_form_is_correct_tvmscript(matmul):
    import tvm

    src = _ir(matmul, MATMUL_SCHEDULE, MATMUL_MEMORY).to_tvmscript("host-cpu")
    assert "def main" in src and "T.parallel" in src
    ex = tvm.compile(tvm.script.from_source(src), target=tvm.target.Target({"kind": "llvm"}))
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256)).astype("float32") for _ in range(2))
    c = tvm.runtime.empty((256, 256), "float32", tvm.cpu())
    ex["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-3)
    with pytest.raises(IRApplyError, match="split factor 7 does not divide it"):
        _ir(matmul, [{"op": "split", "loop": "C.j", "factors": [None, 7]}]).to_tvmscript("host-cpu")


def test_split_tail_allows_a_partial_last_tile(matmul):
    import tvm

    tail = [{"op": "split", "loop": "C.j", "factors": [None, 7], "tail": True},
            {"op": "vectorize", "loop": "C.j.1"}]
    ir = _ir(matmul, tail)
    assert ir.schedule.steps[0].render() == "split(C.j, factors=[None, 7], tail=True)"
    assert CandidateIR.from_json(ir.to_json()) == ir  # the field survives the JSON round trip
    ex = tvm.compile(tvm.script.from_source(ir.to_tvmscript("host-cpu")), target=tvm.target.Target({"kind": "llvm"}))
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((256, 256)).astype("float32") for _ in range(2))
    c = tvm.runtime.empty((256, 256), "float32", tvm.cpu())
    ex["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-3)  # 36 full tiles of 7 and one of 4
    assert _ir(matmul, [dict(tail[0], tail=False)]).schedule.steps[0].args == {"loop": "C.j", "factors": [None, 7]}
    with pytest.raises(IRFormatError, match="field 'tail' must be true or false"):
        _ir(matmul, [dict(tail[0], tail="yes")])
    with pytest.raises(IRFormatError, match=r"\(parallel\): unknown field\(s\) tail"):
        _ir(matmul, [{"op": "parallel", "loop": "C.i", "tail": True}])


def test_untrusted_algorithm_text_is_checked_in_a_worker(matmul):
    good = matmul.build().script()
    ir = CandidateIR.initial(matmul).with_layer("algorithm", {"kind": "tvmscript", "text": good, "note": "same"})
    assert not ir.algorithm.is_trusted
    assert ir.with_layer("schedule", MATMUL_SCHEDULE[:2]).validate("host-cpu") == []
    wrong = good.replace("(256, 256)", "(128, 256)", 1)
    msgs = CandidateIR.initial(matmul).with_layer("algorithm", {"kind": "tvmscript", "text": wrong}).validate(
        "host-cpu")
    assert msgs == ["algorithm signature: parameter 0 (A) is float32[128, 256] but the task's A is float32[256, 256]"]


def test_tensorize_names_only_registered_intrinsics(matmul):
    """The tensorize step takes an intrinsic from the allow-list, each of which TVM 0.27 registers; any
    other name (a model's invention, a Python expression) is one format error line."""
    from tvm.s_tir import TensorIntrin

    from leka.ir.intrinsics import register_tensor_intrinsics
    from leka.ir.steps import SCOPES, TENSOR_INTRINSICS

    register_tensor_intrinsics()  # TVM's tables and LEKA's own (leka.ir.vnni)

    for name in TENSOR_INTRINSICS:
        TensorIntrin.get(name)  # raises when TVM does not know it
    assert {"wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator"} <= set(SCOPES)
    good = _ir(matmul, [{"op": "tensorize", "target": "C.i", "intrin": "wmma_sync_16x16x16_f16f16f32"}])
    assert good.schedule.steps[0].render() == "tensorize(C.i, intrin=wmma_sync_16x16x16_f16f16f32)"
    for bad in ("wmma_sync_32x8x16_f16f16f32", "__import__('os')", "dot_4x4_i8i8s32_neon", 3):
        with pytest.raises(IRFormatError) as e:
            _ir(matmul, [{"op": "tensorize", "target": "C.i", "intrin": bad}])
        msg = str(e.value)
        assert msg.startswith(f"schedule step 0 (tensorize): intrinsic {bad!r} is not an allowed tensor intrinsic")
        assert "\n" not in msg


def test_tensorize_that_does_not_match_is_one_line(matmul):
    """An fp32 loop nest does not match an fp16 WMMA description: TVM's refusal, one line, step named."""
    step = {"op": "tensorize", "target": "C.i", "intrin": "wmma_sync_16x16x16_f16f16f32"}
    errs = _ir(matmul, [step]).validate("cuda")
    assert len(errs) == 1
    assert errs[0].startswith("schedule step 0 tensorize(C.i, intrin=wmma_sync_16x16x16_f16f16f32): ")
    assert "\n" not in errs[0]
