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
