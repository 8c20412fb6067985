"""cpu.conv_channel_pack: NCHW convolutions on narrow maps vectorised along packed output channels."""
from __future__ import annotations

import pytest

from leka.proposers.offline.rules import CPU_RULES, cpu_conv_channel_pack, cpu_conv_register_tile
from leka.tasks import get_task

from tests.test_conv_rules import _context, _fused_conv_bias_relu

NARROW = dict(ci=16, co=32, hw=13, k=3)  # SqueezeNet-like: 13-wide rows fill 13 of 16 fp32 lanes


def test_registered_before_the_width_vectorised_tile():
    assert CPU_RULES.index(cpu_conv_channel_pack) < CPU_RULES.index(cpu_conv_register_tile)


def test_claims_narrow_nchw_conv_and_packs_its_weights():
    irs = cpu_conv_channel_pack.apply(_context(_fused_conv_bias_relu(**NARROW)))
    assert irs and all(ir.notes["rule"] == cpu_conv_channel_pack.NAME for ir in irs)
    mem = [s.op for s in irs[0].memory.steps]
    assert mem == ["cache_read", "transform_layout", "cache_write", "transform_layout"]
    assert {"split", "reorder", "parallel", "vectorize", "unroll", "decompose_reduction"} <= \
        {s.op for s in irs[0].schedule.steps}
    src = irs[0].to_tvmscript("host-cpu")
    # bias + relu in the tile's write-back; the weights read from the packed [ci, kh, kw, co] copy
    assert "T.max(conv2d_nchw_global[" in src and 'T.sblock("T_add")' not in src
    assert "W_global" in src
    # the accumulators kept channels-innermost ([n, y, x, co]): a channel vector is one contiguous store
    assert "conv2d_nchw_global = T.sblock_alloc_buffer((1, 13, 13, 32))" in src


@pytest.mark.parametrize("task", [
    "l1-conv2d_3x3_s1_nchw-32x32x16x16",  # 32-wide rows: the width vector is full
    "l1-conv2d_3x3_s1_nhwc-32x32x16x16",  # NHWC: channels already contiguous
    "l1-conv2d_1x1_s1_nchw-6x6x128x128",  # 36 pixels: the weight copy would cost as much as the conv
    "l1-dwconv2d_3x3_s1_nchw-14x14x384x384",  # depthwise
    "ex-matmul-256",
])
def test_declines_the_rest(task):
    assert cpu_conv_channel_pack.apply(_context(get_task(task))) is None


def test_declines_channel_counts_off_the_vector_and_gpu():
    # 20 channels fill no whole vector of 8 (AVX2) or 16 (AVX-512) fp32 lanes (24 did on an AVX2 host)
    assert cpu_conv_channel_pack.apply(_context(_fused_conv_bias_relu(ci=16, co=20, hw=13))) is None
    assert cpu_conv_channel_pack.apply(_context(_fused_conv_bias_relu(**NARROW), target="cuda")) is None


def test_candidates_are_correct():
    from leka.evaluator import EvalConfig, Evaluator

    task = _fused_conv_bias_relu(**NARROW)
    irs = cpu_conv_channel_pack.apply(_context(task))
    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        for ir in irs:
            res = ev.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
            assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_prime_width_gets_a_tail_tile_and_stays_correct():
    # 11 wide: the 14-pixel knob tiles the whole row, the 7-, 6- and 4-pixel ones have no divisor >= 3 to tile by
    # and take a partial last tile (tail split) instead of declining (ZFNet's 109-wide stem)
    from leka.evaluator import EvalConfig, Evaluator

    task = _fused_conv_bias_relu(ci=3, co=32, hw=11, k=3)
    irs = cpu_conv_channel_pack.apply(_context(task))
    tails = {ir.notes["knobs"]["reg"]: any(s.args.get("tail") for s in ir.schedule.steps) for ir in irs}
    assert tails == {14: False, 6: True, 7: True, 4: True}
    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        for ir in irs:
            res = ev.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
            assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)
