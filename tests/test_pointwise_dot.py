"""cpu.pointwise_dot: 1x1 NCHW convolutions on maps whose rows are a few lanes wide, as dot products along the input
channels (weight rows read as vectors, the input copied channels-last, lanes summed per output)."""
from __future__ import annotations

import pytest

from test_conv_rules import _context, _fused_conv_bias_relu

from leka.proposers.offline.rules import CPU_RULES, cpu_conv_register_tile, cpu_pointwise_dot
from leka.tasks import get_task


def test_registered_before_the_register_tile_it_replaces_on_narrow_rows():
    assert CPU_RULES.index(cpu_pointwise_dot) < CPU_RULES.index(cpu_conv_register_tile)


def test_claims_a_classifier_conv_on_a_3x3_map():
    irs = cpu_pointwise_dot.apply(_context(_fused_conv_bias_relu(ci=128, co=40, hw=3, k=1)))
    assert irs and irs[0].notes["knobs"] == {"reg": 4, "pix": 4}
    ops = [s.op for s in irs[0].schedule.steps]
    assert "rfactor" in ops and ops.index("reorder") < ops.index("rfactor")
    assert [s.op for s in irs[0].memory.steps] == ["cache_read", "transform_layout"]  # the input channels-last
    src = irs[0].to_tvmscript("host-cpu")
    assert "T.vectorized(16)" in src and 'T.sblock("T_add")' in src  # epilogue at the tile, after the lane sums


@pytest.mark.parametrize("shape", [
    dict(ci=128, co=40, hw=6, k=1),  # 6-wide rows: cpu.conv_register_tile fills 6 of 16 lanes and was 2-4x faster
    dict(ci=128, co=40, hw=4, k=1),  # 16 pixels: whole vectors, cpu.pointwise_conv's
    dict(ci=24, co=40, hw=3, k=1),  # input channels not a multiple of the vector
    dict(ci=128, co=40, hw=3, k=3),  # a 3x3 window
])
def test_declines_the_rest(shape):
    assert cpu_pointwise_dot.apply(_context(_fused_conv_bias_relu(**shape))) is None


def test_declines_nhwc_and_gpu():
    assert cpu_pointwise_dot.apply(_context(get_task("l1-conv2d_1x1_s1_nhwc-25x5x64x64"))) is None
    assert cpu_pointwise_dot.apply(_context(_fused_conv_bias_relu(ci=128, co=40, hw=3, k=1), target="cuda")) is None


@pytest.fixture(scope="module")
def evaluator():
    from leka.evaluator import EvalConfig, Evaluator

    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        yield ev


@pytest.mark.parametrize("shape", [dict(ci=64, co=48, hw=3, k=1), dict(ci=32, co=20, hw=1, k=1),
                                   dict(ci=48, co=24, hw=2, k=1)])
def test_every_variant_is_correct(evaluator, shape):
    """Tiles of whole rows only: a pixel tile ending mid-row had its row's lane sums written back half computed."""
    task = _fused_conv_bias_relu(**shape)
    irs = cpu_pointwise_dot.apply(_context(task))
    assert irs
    for ir in irs:
        res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_the_suites_3x3_pointwise_task_is_correct(evaluator):
    task = get_task("l1-conv2d_1x1_s1_nchw-3x3x256x256")
    ir = cpu_pointwise_dot.apply(_context(task))[0]
    res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
    assert res.compiled and res.correct, (res.failure, res.error)
