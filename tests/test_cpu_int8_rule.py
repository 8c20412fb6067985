"""cpu.int8_dot: int8 GEMM-like reductions on x86 targets with AVX-512 VNNI through vpdpbusd (u8 x s8), the
s8 activations shifted to u8 and the weights packed inside the kernel. Which tasks and targets it takes,
that its candidates are judged correct by the evaluator, and that the machine code holds vpdpbusd."""
from __future__ import annotations

import pytest

from leka.ir import CandidateIR
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import CPU_RULES, cpu_int8_dot
from leka.targets import get_target
from leka.targets import TargetPreset
from leka.tasks import get_task

GEMM = "l1-linear-128x512x128-i8"  # X[m,k] . W[n,k]^T + bias, requantised to int8
CONV = "l1-conv2d_1x1_nhwc_i8acc-6x6x128x128-i8"  # (x + 3) * w: a zero point, W[1,1,ci,co]
GEMV = "l1-dense_i8acc-1024x1000-i8"  # one row: declined (packing the weights per call does not pay)
VNNI_HOST = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "znver5", "num-cores": 2}


def _preset(target: dict, family: str = "cpu") -> TargetPreset:
    return TargetPreset("t", family, target, False, None, facts={"cores": 2, "vector_bits": 512})


def _padded_gemm(m: int = 32, k: int = 64, n: int = 24):
    """(x + 3) . W[k, n] with n = 24: packed and accumulated on 32 columns, the valid 24 copied out."""
    import numpy as np
    from tvm import te, tirx

    from leka.tasks import ArgSpec, Task

    x, w = te.placeholder((m, k), "int8", name="X"), te.placeholder((k, n), "int8", name="W")
    r = te.reduce_axis((0, k), "r")
    y = te.compute((m, n), lambda i, j: te.sum((x[i, r].astype("int32") + tirx.const(3, "int32"))
                                               * w[r, j].astype("int32"), axis=r), name="Y")
    func = te.create_prim_func([x, w, y])
    return Task(id="t-i8-gemm-padded", pattern="i8_gemm", level=1, domain="test",
                args=(ArgSpec("X", (m, k), "int8"), ArgSpec("W", (k, n), "int8"),
                      ArgSpec("Y", (m, n), "int32", "output")),
                build=lambda: func, reference=lambda a, b: (a.astype(np.int64) + 3) @ b.astype(np.int64),
                flops=2 * m * n * k, bytes=0, dtype="int8")


def _task(task_id: str):
    return _padded_gemm() if task_id == "padded" else get_task(task_id)


def _variants(task_id: str, target: dict = VNNI_HOST):
    task = _task(task_id)
    return cpu_int8_dot.apply(RuleContext.build(task, CandidateIR.initial(task), _preset(target), []))


@pytest.fixture(scope="module")
def evaluator():
    from leka.evaluator import EvalConfig, Evaluator

    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        yield ev


def test_registered_first():
    assert CPU_RULES[0] is cpu_int8_dot


def test_vnni_targets():
    assert cpu_int8_dot.has_vnni(VNNI_HOST)
    assert cpu_int8_dot.has_vnni({"kind": "llvm", "mcpu": "skylake-avx512", "mattr": ["+avx512vnni"]})
    for tgt in ({**VNNI_HOST, "mcpu": "skylake-avx512"}, {**VNNI_HOST, "mcpu": "haswell"},
                get_target("rpi5").target, {"kind": "cuda", "arch": "sm_90"}):
        assert not cpu_int8_dot.has_vnni(tgt), tgt


@pytest.mark.parametrize("task_id", [GEMM, CONV, "padded"])
def test_applies_to_int8_gemm_and_1x1_conv(task_id):
    irs = _variants(task_id)
    assert irs and all(ir.notes["rule"] == cpu_int8_dot.NAME for ir in irs)
    assert ir_has_tensorize(irs[0])
    assert "vpdpbusd" not in irs[0].algorithm.text  # the rewrite is plain TIR: the schedule tensorises it


def ir_has_tensorize(ir) -> bool:
    return any(s.op == "tensorize" and s.args["intrin"] == cpu_int8_dot.INTRIN for s in ir.schedule.steps)


@pytest.mark.parametrize("task_id", [GEMV, "l1-conv2d_1x1_nhwc_i8acc-48x48x8x16-i8", "ex-matmul-256",
                                     "l1-conv2d_3x3_s1_nhwc_i8acc-8x8x64x64-i8",
                                     "l1-conv2d_3x3_s1_nhwc_u8acc-14x14x64x64-i8", "l1-dequantize_i8_f32-1000-i8"])
def test_declines_one_row_short_k_fp32_uint8_weights_3x3_and_elementwise(task_id):
    assert _variants(task_id) is None


def test_declines_targets_without_vnni():
    assert _variants(GEMM, {**VNNI_HOST, "mcpu": "skylake-avx512"}) is None
    assert _variants(GEMM, get_target("rpi5").target) is None


@pytest.mark.parametrize("task_id", [GEMM, CONV, "padded"])
def test_candidates_use_vpdpbusd(task_id):
    import tvm

    ir = _variants(task_id)[0]
    ex = tvm.compile(ir.apply().sch.mod, target=tvm.target.Target(VNNI_HOST))
    assert "vpdpbusd" in ex.mod.inspect_source("asm")


@pytest.mark.skipif(not cpu_int8_dot.has_vnni(get_target("host-cpu").target),
                    reason="this host has no AVX-512 VNNI: vpdpbusd code cannot run here (LLVM aborts lowering it)")
@pytest.mark.parametrize("task_id", [GEMM, CONV, "padded"])
def test_candidates_are_correct(evaluator, task_id):
    task = _task(task_id)
    ir = _variants(task_id)[0]
    res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
    assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)
