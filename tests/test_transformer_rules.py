"""Transformer kernels on CPU (issue 22, item 3): the encoder-block builder, cpu.matmul_epilogue on the batched
and Erf-GELU GEMMs TVM's fuser makes of it, the fused-row softmax on alg.fast_math's rewrite, and the
reverse_compute_inline guard, each checked against TVM's default build of the same kernel on a small block."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")


@lru_cache(maxsize=1)
def _kernels(tmp: str = "/tmp") -> dict:
    import onnx

    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model
    from leka.optimize.transformer_models import encoder_block

    import tempfile
    path = tempfile.mkdtemp() + "/enc.onnx"
    onnx.save(encoder_block(seq=16, dim=32, heads=2, ffn=64), path)
    _loaded, mod = import_model(path)
    return {s.name: s for s in kernel_specs(mod)}


def _spec(part: str):
    return next(s for n, s in _kernels().items() if part in n)


def _ctx(spec):
    from leka.ir import CandidateIR
    from leka.optimize.extract import make_task
    from leka.proposers.offline.context import RuleContext
    from leka.targets import get_target

    preset = get_target("host-cpu")
    task = make_task(spec, preset)
    return RuleContext.build(task, CandidateIR.initial(task), preset, []), preset


def _run(func, spec) -> list[np.ndarray]:
    from leka.targets import get_target

    exe = tvm.compile(tvm.IRModule({"main": func}), target=get_target("host-cpu").tvm_target())
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor((2 * rng.standard_normal(s)).astype(d), tvm.cpu()) for _n, s, d, _r in spec.args]
    exe["main"](*args)
    return [a.numpy() for a, (_n, _s, _d, r) in zip(args, spec.args) if r == "output"]


def _check(spec, ir, preset) -> None:
    from leka.optimize.extract import _parse_trusted

    got = _run(tvm.script.from_source(ir.to_tvmscript(preset)).with_attr("global_symbol", "main"), spec)
    want = _run(_parse_trusted(spec.script), spec)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_encoder_block_runs_in_onnxruntime():
    import onnx
    import onnxruntime as ort

    from leka.optimize.transformer_models import encoder_block

    m = encoder_block(seq=8, dim=16, heads=2, ffn=32)
    onnx.checker.check_model(m, full_check=True)
    ops = {n.op_type for n in m.graph.node}
    assert {"LayerNormalization", "Softmax", "Erf", "Transpose", "MatMul"} <= ops
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": np.ones((1, 8, 16), np.float32)})[0]
    assert y.shape == (1, 8, 16) and np.isfinite(y).all()


def test_fast_erf_matches_math_erf():
    from leka.proposers.offline.algorithm.fast_math import _ERF_A, _ERF_B

    x = np.linspace(-6, 6, 4001)
    xc = np.clip(x, -4, 4)
    num, den = np.polyval(_ERF_A, xc * xc) * xc, np.polyval(_ERF_B, xc * xc)
    assert np.abs(num / den - np.vectorize(math.erf)(x)).max() < 1e-6


@pytest.mark.parametrize("kernel,fast", [("erf", True), ("erf", False), ("matmul1_divide", False)])
def test_matmul_epilogue_is_correct_and_fuses(kernel, fast):
    from leka.proposers.offline.rules import cpu_matmul_epilogue

    spec = _spec(kernel)
    ctx, preset = _ctx(spec)
    irs = [ir for ir in cpu_matmul_epilogue.apply(ctx) or [] if ir.notes["knobs"]["fast_math"] == fast]
    assert irs, f"cpu.matmul_epilogue declined {spec.name}"
    ir = irs[0]
    script = ir.to_tvmscript(preset)
    assert "T.vectorized" in script  # (a kernel this small stays serial: MIN_PARALLEL_WORK)
    assert ("T.erf" in script) is (kernel == "erf" and not fast)  # fast math: the polynomial, no libm call
    live = ir.apply()
    assert len(live.block_names()) == 3  # init, update, write-back with the whole epilogue folded in
    _check(spec, ir, preset)


@pytest.mark.parametrize("kernel", ["softmax", "layer_norm"])
def test_row_fusion_one_pass_per_row(kernel):
    """Each row's reductions split into vector lanes (rfactor) and computed at the row, rows parallel;
    softmax's exp as alg.fast_math's polynomial."""
    from leka.proposers.offline.rules import cpu_row_fusion

    spec = _spec(kernel)
    ctx, preset = _ctx(spec)
    ir = next(ir for ir in cpu_row_fusion.apply(ctx) if ir.notes["knobs"]["rfactor"] == "rows")
    assert ir.notes["knobs"].get("fast_math", False) is (kernel == "softmax")
    script = ir.to_tvmscript(preset)
    assert "T.exp" not in script and "T.vectorized" in script and "_rf" in script
    live = ir.apply()
    row = {lp[0] for lp in map(live.loops_of, live.block_names())}
    assert len(row) == 1  # every block under the one row loop
    _check(spec, ir, preset)


def test_reverse_inline_guard_keeps_gelu_gemm_well_formed():
    """TVM 0.27 reverse-inlines a stage whose producer another stage still reads and leaves a dangling
    buffer; the guard refuses it, so every cpu.tile_reduction variant of the GELU GEMM parses and is correct."""
    from leka.proposers.offline.rules import cpu_tile_reduction

    spec = _spec("erf")
    ctx, preset = _ctx(spec)
    irs = cpu_tile_reduction.apply(ctx) or []
    assert irs
    for ir in irs[:2]:
        _check(spec, ir, preset)


def _nt_batched_spec():
    """Q @ K^T with K stored [batch, keys, d] (the transpose folded into the matmul), scaled: an NT batched GEMM."""
    from tvm import te

    from leka.optimize.extract import KernelSpec

    q = te.placeholder((2, 16, 8), "float32", name="q")
    k = te.placeholder((2, 32, 8), "float32", name="k")
    r = te.reduce_axis((0, 8), name="r")
    s = te.compute((2, 16, 32), lambda b, i, j: te.sum(q[b, i, r] * k[b, j, r], axis=r), name="s")
    y = te.compute((2, 16, 32), lambda b, i, j: s[b, i, j] * 0.125, name="y")
    script = te.create_prim_func([q, k, y]).with_attr("global_symbol", "main").script()
    return KernelSpec("nt0", "nt_batched", ["nt_batched"], 1, script,
                      [("q", (2, 16, 8), "float32", "input"), ("k", (2, 32, 8), "float32", "input"),
                       ("y", (2, 16, 32), "float32", "output")])


def test_matmul_epilogue_packs_a_transposed_operand():
    from leka.proposers.offline.rules import cpu_matmul_epilogue

    spec = _nt_batched_spec()
    ctx, preset = _ctx(spec)
    ir = (cpu_matmul_epilogue.apply(ctx) or [None])[0]
    assert ir is not None and any(st.op == "transform_layout" for st in ir.memory.steps)
    assert "T.vectorized" in ir.to_tvmscript(preset)
    _check(spec, ir, preset)
