"""The vision / image-processing / int8 catalogue (benchmark/vision_*, image_*, quant_*).

(a) every workload is non-degenerate (NumPy only), (b) catalogue shape: counts, ids, dtypes,
pattern multiplicity, (c) a representative subset compiles with TVM (naive definition) and matches
its NumPy reference on several input distributions.
"""
from __future__ import annotations

import importlib
import re
from collections import Counter

import numpy as np
import pytest

from leka.tasks import validate_task_metadata
from leka.tasks.nondegenerate import check_nondegenerate

MODULES = ("vision_l1_conv", "vision_l1_act", "vision_l1_pool", "vision_l1_tensor", "vision_l1_resample",
           "vision_l1_detect", "vision_l2_blocks", "quant_l1", "quant_l2", "image_l1_color", "image_l1_filter",
           "image_l1_geometry", "image_l2")


def _tasks():
    out = []
    for m in MODULES:
        out += importlib.import_module(f"benchmark.{m}").tasks()
    return out


TASKS = _tasks()
BY_ID = {t.id: t for t in TASKS}


def test_catalogue_size_and_coverage():
    patterns = Counter(t.pattern for t in TASKS)
    assert len(patterns) >= 180, len(patterns)
    assert len(TASKS) >= 360, len(TASKS)
    assert len(BY_ID) == len(TASKS), "duplicate task ids"
    assert {"float32", "float16", "int8"} <= {t.dtype for t in TASKS}
    assert {1, 2} <= {t.level for t in TASKS}
    assert {t.domain for t in TASKS} == {"vision", "image-processing"}
    single = [p for p, n in patterns.items() if n < 2]
    assert not single, f"patterns with a single workload: {single}"


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_metadata(task):
    validate_task_metadata(task)
    sfx = {"float32": "", "float16": "f16", "int8": "i8", "uint8": "u8", "uint16": "u16"}[task.dtype]
    base = task.pattern[:-len(sfx) - 1] if sfx and task.pattern.endswith("_" + sfx) else task.pattern
    assert re.fullmatch(rf"l{task.level}-{re.escape(base)}-[0-9x]+" + (f"-{sfx}" if sfx else ""), task.id), task.id
    assert task.flops >= 0 and task.bytes > 0 and task.description
    assert task.args[: len(task.inputs)] == task.inputs, "inputs must precede outputs"


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_nondegenerate(task):
    assert check_nondegenerate(task) == []


REPRESENTATIVE = (
    "l1-conv2d_3x3_s2_nhwc-32x32x16x32", "l1-dwconv2d_3x3_s2_nhwc-24x24x32x32-f16",
    "l1-conv2d_transpose_3x3_s2_nhwc-16x16x64x32", "l1-conv2d_3x3_s1_nhwc_i8acc-8x8x64x64-i8",
    "l1-requantize_i32_i8_per_channel-6x6x128-i8", "l1-nv12_to_rgb-480x640-u8", "l1-resize_bicubic_f32-96x96x3",
    "l2-mbv2_inverted_residual_s1_nhwc-14x14x64x384x64", "l2-dscnn_block_i8_nhwc-25x5x64-i8",
    "l2-harris_response_f32-240x320",
)


def _compare(task, got, ref):
    rtol, ats = task.tolerance()
    if ref.dtype.kind in "iub":
        assert np.all(np.abs(got.astype(np.int64) - ref.astype(np.int64)) <= ats + rtol * np.abs(ref.astype(np.int64)))
    else:
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                                   atol=ats * float(np.abs(ref.astype(np.float64)).max()))


@pytest.mark.parametrize("task_id", REPRESENTATIVE)
def test_tvm_matches_reference(task_id):
    tvm = pytest.importorskip("tvm")
    task = BY_ID[task_id]
    ex = tvm.compile(task.build(), target="llvm")
    for seed, dist in ((0, "normal"), (1, "heavy"), (2, "mixed-scale")):
        ins = task.generate_inputs(np.random.default_rng(seed), dist)
        refs = task.run_reference(ins)
        args = [tvm.runtime.tensor(a) for a in ins] + [tvm.runtime.empty(o.shape, o.dtype) for o in task.outputs]
        ex["main"](*args)
        for got, ref in zip(args[len(ins):], refs):
            _compare(task, got.numpy(), ref)


def test_definitions_are_lazy():
    """Listing the catalogue must not build TE: build is a callable evaluated on demand."""
    assert all(callable(t.build) for t in TASKS)


def test_mcu_budgets_hold_for_the_naive_definition():
    """Workloads carrying an MCU SRAM budget must fit it as defined (arguments + naive intermediates)."""
    tvm = pytest.importorskip("tvm")
    from leka.ir.checks import footprint_bytes

    budgeted = [t for t in TASKS if t.memory_budget_bytes]
    assert len(budgeted) >= 20
    for t in budgeted:
        used = sum(a.nbytes for a in t.args) + sum(footprint_bytes(tvm.IRModule({"main": t.build()})).values())
        assert used <= t.memory_budget_bytes, (t.id, used)
