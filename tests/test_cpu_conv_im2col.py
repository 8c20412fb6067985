"""cpu.conv_im2col: NCHW convolutions on small maps as im2col + a register-tiled GEMM over the pixels."""
from __future__ import annotations

import pytest

from leka.proposers.offline.rules import CPU_RULES, cpu_conv_im2col, cpu_conv_register_tile
from leka.tasks import get_task

from tests.test_conv_rules import _context, _fused_conv_bias_relu

SMALL = dict(ci=16, co=32, hw=8, k=3)  # ResNet-8-like: 8-wide rows fill half a 16-lane vector, 64 pixels


def test_registered_before_the_width_vectorised_tile():
    assert CPU_RULES.index(cpu_conv_im2col) < CPU_RULES.index(cpu_conv_register_tile)


def test_rewrites_to_im2col_and_tiles_the_pixels():
    irs = cpu_conv_im2col.apply(_context(_fused_conv_bias_relu(**SMALL)))
    assert irs and all(ir.notes["rule"] == cpu_conv_im2col.NAME for ir in irs)
    # the algorithm layer holds the im2col copy [n, ci, kh, kw, p] and the conv over p = y*W + x
    text = irs[0].algorithm.text
    assert irs[0].algorithm.kind == "tvmscript" and "_reindex = T.sblock_alloc_buffer((1, 16, 3, 3, 64))" in text
    assert {"split", "reorder", "parallel", "vectorize", "unroll", "decompose_reduction"} <= \
        {s.op for s in irs[0].schedule.steps}
    src = irs[0].to_tvmscript("host-cpu")
    assert "T.max(conv2d_nchw_global[" in src and 'T.sblock("T_add")' not in src  # epilogue in the write-back


@pytest.mark.parametrize("task", [
    "l1-conv2d_3x3_s1_nchw-32x32x16x16",  # 32-wide rows: the width vector is full (direct tile wins)
    "l1-conv2d_3x3_s1_nhwc-16x16x32x32",  # NHWC
    "l1-conv2d_1x1_s1_nchw-6x6x128x128",  # 1x1: cpu.pointwise_conv's
    "l1-dwconv2d_3x3_s1_nchw-14x14x384x384",  # depthwise
    "ex-matmul-256",  # not a convolution
])
def test_declines_the_rest(task):
    assert cpu_conv_im2col.apply(_context(get_task(task))) is None


def test_declines_short_reductions_few_channels_and_gpu():
    # 3 input channels x 3x3 = 27 per output: a first layer, where the direct tiles measured faster
    assert cpu_conv_im2col.apply(_context(_fused_conv_bias_relu(ci=3, co=32, hw=8))) is None
    # 16 output channels: too few to share the im2col copy (suite 5x5 6->16: 0.021 vs 0.011 ms)
    assert cpu_conv_im2col.apply(_context(_fused_conv_bias_relu(ci=16, co=16, hw=8))) is None
    assert cpu_conv_im2col.apply(_context(_fused_conv_bias_relu(**SMALL), target="cuda")) is None


def test_pads_a_map_the_vector_does_not_divide():
    irs = cpu_conv_im2col.apply(_context(_fused_conv_bias_relu(ci=16, co=32, hw=6)))
    assert irs and "(1, 16, 3, 3, 48)" in irs[0].algorithm.text  # 36 pixels padded to 48


@pytest.mark.parametrize("hw", [8, 6])  # 64 pixels; 36 pixels padded to 48
def test_candidates_are_correct(hw):
    from leka.evaluator import EvalConfig, Evaluator

    task = _fused_conv_bias_relu(**{**SMALL, "hw": hw})
    irs = cpu_conv_im2col.apply(_context(task))
    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        for ir in irs:
            res = ev.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
            assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_suite_strided_conv_is_correct():
    """A suite task whose stride-2 conv writes the function's output directly (no epilogue)."""
    from leka.evaluator import EvalConfig, Evaluator

    task = get_task("l1-conv2d_3x3_s2_nchw-16x16x32x64")
    irs = cpu_conv_im2col.apply(_context(task))
    assert irs
    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        res = ev.evaluate(task, irs[0].to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (res.failure, res.error)
