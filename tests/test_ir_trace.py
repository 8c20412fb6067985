"""TVM trace <-> schedule/memory layers."""
from __future__ import annotations

import json

import pytest

from leka.ir import CandidateIR, IRApplyError, export_trace, import_trace
from leka.tasks import get_task

from test_ir_layers import MATMUL_MEMORY, MATMUL_SCHEDULE


@pytest.fixture(scope="module")
def matmul():
    return get_task("ex-matmul-256")


def test_export_then_import_round_trips(matmul):
    ir = CandidateIR.initial(matmul).with_layer("schedule", MATMUL_SCHEDULE).with_layer("memory", MATMUL_MEMORY)
    trace = export_trace(ir)
    text = json.dumps(trace)  # plain JSON, no TVM objects left
    back = import_trace(matmul, json.loads(text))
    assert back.to_json() == ir.to_json()


def test_a_partial_tile_split_round_trips(matmul):
    # TVM's non-divisible split in a trace comes back as a "tail" split, not as a step the IR refuses
    tail = [{"op": "split", "loop": "C.j", "factors": [None, 7], "tail": True},
            {"op": "split", "loop": "C.i", "factors": [None, 8]}]
    ir = CandidateIR.initial(matmul).with_layer("schedule", tail)
    back = import_trace(matmul, json.loads(json.dumps(export_trace(ir))))
    assert back.to_json() == ir.to_json()
    assert "tail" not in back.schedule.steps[1].args


def test_hand_written_tvm_schedule_imports(matmul):
    import tvm
    from tvm import s_tir

    sch = s_tir.Schedule(matmul.build())
    c = sch.get_sblock("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(io, ko, ki, ii, j)
    ar = sch.cache_read(c, 0, "global")
    sch.compute_at(ar, ko)
    sch.storage_align(ar, 0, 0, 16, 1)
    sch.transform_layout(ar, ("write", 0), lambda a, b: (b, a))
    sch.parallel(io)
    sch.vectorize(j)
    ir = import_trace(matmul, sch.trace.as_json())
    assert [s.op for s in ir.schedule.steps] == ["split", "split", "reorder", "parallel", "vectorize"]
    assert [s.op for s in ir.memory.steps] == ["cache_read", "storage_align", "transform_layout"]
    assert ir.memory.steps[0].args == {"block": "C", "buffer": 0, "scope": "global", "at": "C.k.0", "after": 2}
    assert ir.memory.steps[2].args["permutation"] == [1, 0]
    tvm.ir.assert_structural_equal(ir.apply().sch.mod, sch.mod)
    assert import_trace(matmul, export_trace(ir)).to_json() == ir.to_json()


def test_unsupported_instruction_is_reported(matmul):
    trace = [[["GetSBlock", [], ["C", "main"], ["b0"]], ["Blockize", ["b0"], [], ["b1"]]], []]
    with pytest.raises(IRApplyError, match="trace instruction Blockize is not supported by the layered IR"):
        import_trace(matmul, trace)


def test_tensorize_imports_only_allowed_intrinsics():
    """A tensor-core schedule's trace (WMMA load/fill/sync/store Tensorize instructions) imports into steps
    that give the same function; a Tensorize naming an intrinsic off the allow-list does not import."""
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import gpu_tensor_core_matmul
    from leka.targets import get_target

    task = get_task("l2-dense_bn_relu-32x128x128-f16")
    ir = gpu_tensor_core_matmul.apply(RuleContext.build(task, CandidateIR.initial(task), get_target("cuda"), []))[0]
    trace = export_trace(ir)
    assert sum(ins[0] == "Tensorize" for ins in trace[0]) == 5
    back = import_trace(task, json.loads(json.dumps(trace)))
    assert back.to_tvmscript("cuda") == ir.to_tvmscript("cuda")
    bad = [[["GetSBlock", [], ["fc_acc", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
            ["Tensorize", ["l1"], ["dot_4x4_i8i8s32_neon", 1], []]], []]
    with pytest.raises(IRApplyError, match="'dot_4x4_i8i8s32_neon': not an allowed tensor intrinsic"):
        import_trace(task, bad)
