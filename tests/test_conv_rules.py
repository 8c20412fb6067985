"""CPU convolution rules of the offline proposer: which blocks they claim, and that their candidates are
judged correct by the evaluator (NCHW and NHWC, stride 2, padding, 1x1, fused conv+bias+relu)."""
from __future__ import annotations

import pytest

from leka.ir import CandidateIR
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import CPU_RULES, cpu_conv_register_tile, cpu_depthwise_conv, cpu_pointwise_conv
from leka.targets import get_target
from leka.tasks import get_task

CONV_TASKS = ["l1-conv2d_3x3_s1_nchw-32x32x16x16", "l1-conv2d_3x3_s1_nhwc-32x32x16x16",
              "l1-conv2d_3x3_s2_nchw-16x16x32x64", "l1-conv2d_3x3_s2_nhwc-32x32x16x32",
              "l1-conv2d_1x1_s1_nchw-6x6x128x128"]


def _context(task, target: str = "host-cpu") -> RuleContext:
    """The rule's view of `task`. On host-cpu the facts say 512-bit vectors whatever this host has: which convs a
    rule claims depends on the lanes (an 8-wide row fills AVX2's 8 fp32 lanes, half of AVX-512's 16), and these
    expectations are written for 16; the candidates are still compiled and judged for this host."""
    from dataclasses import replace

    preset = get_target(target)
    if target == "host-cpu":
        preset = replace(preset, facts={**(preset.facts or {}), "vector_bits": 512})
    return RuleContext.build(task, CandidateIR.initial(task), preset, [])


def _variants(task_id: str, target: str = "host-cpu"):
    return cpu_conv_register_tile.apply(_context(get_task(task_id), target))


def test_registered_before_the_generic_tiling():
    assert CPU_RULES.index(cpu_conv_register_tile) < [r.NAME for r in CPU_RULES].index("cpu.tile_reduction")


@pytest.mark.parametrize("task_id,vec,reg", [
    ("l1-conv2d_3x3_s1_nchw-32x32x16x16", "x", "o"),  # NCHW: width vectorised, output channels in the tile
    ("l1-conv2d_3x3_s1_nhwc-32x32x16x16", "o", "x"),  # NHWC: output channels vectorised, width in the tile
])
def test_axes_follow_the_layout(task_id, vec, reg):
    ctx = _context(get_task(task_id))
    main = next(b for b in ctx.infos if b.is_reduction)
    axes = cpu_conv_register_tile.conv_axes(ctx, main)
    assert axes is not None
    assert main.loops[axes.vec].endswith("." + vec) and main.loops[axes.reg].endswith("." + reg)


@pytest.mark.parametrize("task_id", CONV_TASKS)
def test_applies_to_conv_tasks(task_id):
    irs = _variants(task_id)
    assert irs and all(ir.notes["rule"] == "cpu.conv_register_tile" for ir in irs)
    ops = {s.op for s in irs[0].schedule.steps}
    assert {"split", "reorder", "vectorize", "unroll", "parallel", "decompose_reduction"} <= ops
    assert [s.op for s in irs[0].memory.steps] == ["cache_write"]


@pytest.mark.parametrize("task_id", ["ex-matmul-256", "ex-softmax-512x384", "l1-relu-32x32x16",
                                     "l1-dwconv2d_3x3_s1_nhwc-48x48x8x8", "l1-dwconv2d_3x3_s1_nchw-14x14x384x384"])
def test_declines_non_conv_and_depthwise(task_id):
    assert _variants(task_id) is None


def test_declines_gpu_targets():
    assert _variants(CONV_TASKS[0], target="cuda") is None


def _fused_conv_bias_relu(ci: int = 8, co: int = 16, hw: int = 12, k: int = 3, groups: int = 1):
    """A conv + bias + relu PrimFunc shaped like the kernels `leka optimize` extracts (NCHW, three blocks);
    grouped with `groups` > 1 (AlexNet's conv2: 2 groups of 48 -> 128 channels)."""
    from tvm import te, topi

    from leka.tasks import ArgSpec, Task

    x = te.placeholder((1, ci, hw, hw), "float32", name="X")
    w = te.placeholder((co, ci // groups, k, k), "float32", name="W")
    bias = te.placeholder((1, co, 1, 1), "float32", name="B")
    conv = (topi.nn.conv2d_nchw(x, w, stride=1, padding=k // 2, dilation=1) if groups == 1 else
            topi.nn.group_conv2d_nchw(x, w, stride=1, padding=k // 2, dilation=1, groups=groups))
    out = topi.nn.relu(topi.add(conv, bias))
    func = te.create_prim_func([x, w, bias, out])

    def reference(xs, ws, bs):
        import numpy as np

        p, cig, cog = k // 2, ci // groups, co // groups
        xp = np.pad(xs, ((0, 0), (0, 0), (p, p), (p, p)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))  # n c y x ky kx
        conv = np.concatenate([np.einsum("ncyxij,ocij->noyx", win[:, g * cig:(g + 1) * cig],
                                         ws[g * cog:(g + 1) * cog]) for g in range(groups)], axis=1)
        return np.maximum(conv + bs, 0).astype("float32")

    name = f"t-conv{k}x{k}-bias-relu-{hw}" + (f"-g{groups}" if groups > 1 else "")
    return Task(id=name, pattern="conv_bias_relu", level=1, domain="vision",
                args=(ArgSpec("X", (1, ci, hw, hw), "float32", "input"),
                      ArgSpec("W", (co, ci // groups, k, k), "float32", "input"),
                      ArgSpec("B", (1, co, 1, 1), "float32", "input"),
                      ArgSpec("out", (1, co, hw, hw), "float32", "output")),
                build=lambda: func, reference=reference, flops=2 * co * ci // groups * k * k * hw * hw, bytes=0,
                dtype="float32")


GROUPED = dict(ci=32, co=64, hw=13, k=5, groups=2)  # AlexNet's conv2 in small: 2 groups, 13-wide rows


def test_grouped_conv_is_tiled_not_taken_for_depthwise():
    """attack: a grouped conv reads its input channel as (co // 32) * 16 + rc, which once looked like a
    depthwise read (every rule declined AlexNet's conv2/4/5: 7.6x from the generic rules, 34 ms of its 80);
    expect: the register tile and the channel pack claim it, im2col (one input-channel range) declines it."""
    from leka.proposers.offline.rules import cpu_conv_channel_pack, cpu_conv_im2col

    ctx = _context(_fused_conv_bias_relu(**GROUPED))
    main = next(b for b in ctx.infos if b.is_reduction)
    axes = cpu_conv_register_tile.conv_axes(ctx, main)
    assert axes is not None and axes.grouped and main.loops[axes.reg].endswith(".ff")  # output channels
    assert cpu_conv_register_tile.apply(ctx) and cpu_conv_channel_pack.apply(ctx)
    assert cpu_conv_im2col.apply(ctx) is None


def test_fused_epilogue_goes_into_the_tile_write_back():
    task = _fused_conv_bias_relu()
    irs = cpu_conv_register_tile.apply(_context(task))
    assert irs
    src = irs[0].to_tvmscript("host-cpu")
    # bias + relu are computed in the tile's write-back from the accumulator, not as a separate pass
    assert "T.max(conv2d_nchw_global[" in src and 'T.sblock("T_add")' not in src


@pytest.fixture(scope="module")
def evaluator():
    from leka.evaluator import EvalConfig, Evaluator

    with Evaluator("host-cpu", EvalConfig(compile_timeout_s=120.0, run_timeout_s=60.0, measure=False)) as ev:
        yield ev


@pytest.mark.parametrize("task_id", CONV_TASKS[:4])
def test_candidates_are_correct_through_the_evaluator(evaluator, task_id):
    task = get_task(task_id)
    for ir in _variants(task_id)[:2]:
        res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_fused_conv_candidate_is_correct_through_the_evaluator(evaluator):
    task = _fused_conv_bias_relu()
    ir = cpu_conv_register_tile.apply(_context(task))[0]
    res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
    assert res.compiled and res.correct, (res.failure, res.error)


def test_grouped_conv_candidates_are_correct_through_the_evaluator(evaluator):
    from leka.proposers.offline.rules import cpu_conv_channel_pack

    task = _fused_conv_bias_relu(**GROUPED)
    ctx = _context(task)
    for ir in cpu_conv_register_tile.apply(ctx)[:2] + cpu_conv_channel_pack.apply(ctx)[:1]:
        res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (ir.notes["rule"], ir.notes["knobs"], res.failure, res.error)


DW_TASKS = ["l1-dwconv2d_3x3_s1_nchw-14x14x384x384", "l1-dwconv2d_3x3_s2_nchw-28x28x192x192",
            "l1-dwconv2d_3x3_s1_nhwc-48x48x8x8", "l1-dwconv2d_5x5_s2_nhwc-28x28x72x72"]
# suite 1x1 NCHW maps are 6x6 and 3x3 (pixels not a multiple of the vector: declined), so a fused 16x16 one
PW_TASK = dict(ci=32, co=24, hw=16, k=1)


def _task(task_id):
    return _fused_conv_bias_relu(**PW_TASK) if task_id == "pw" else get_task(task_id)


@pytest.mark.parametrize("rule,task_id", [(cpu_depthwise_conv, t) for t in DW_TASKS] + [(cpu_pointwise_conv, "pw")])
def test_depthwise_and_pointwise_rules_claim_their_kernels(rule, task_id):
    irs = rule.apply(_context(_task(task_id)))
    assert irs and all(ir.notes["rule"] == rule.NAME for ir in irs)
    ops = {s.op for s in irs[0].schedule.steps}
    assert {"split", "reorder", "vectorize", "unroll", "decompose_reduction"} <= ops


@pytest.mark.parametrize("rule,task_id", [
    (cpu_depthwise_conv, "l1-conv2d_3x3_s1_nchw-32x32x16x16"),  # dense conv: a channel reduction
    (cpu_depthwise_conv, "l1-conv2d_1x1_s1_nchw-6x6x128x128"),
    (cpu_depthwise_conv, "ex-matmul-256"),
    (cpu_pointwise_conv, "l1-conv2d_3x3_s1_nchw-32x32x16x16"),  # a 3x3 window
    (cpu_pointwise_conv, "l1-conv2d_1x1_s2_nchw-28x28x128x256"),  # strided: input pixels != output pixels
    (cpu_pointwise_conv, "l1-conv2d_1x1_s1_nhwc-25x5x64x64"),  # NHWC: left to cpu.conv_register_tile
    (cpu_pointwise_conv, "l1-conv2d_1x1_s1_nchw-6x6x128x128"),  # 36 pixels: not whole vectors
    (cpu_pointwise_conv, "l1-dwconv2d_3x3_s1_nchw-14x14x384x384"),
    (cpu_pointwise_conv, "ex-matmul-256"),
])
def test_depthwise_and_pointwise_rules_decline_the_rest(rule, task_id):
    assert rule.apply(_context(get_task(task_id))) is None
    assert rule.apply(_context(_task(DW_TASKS[0] if rule is cpu_depthwise_conv else "pw"), target="cuda")) is None


def test_pointwise_epilogue_goes_into_the_tile_write_back():
    src = cpu_pointwise_conv.apply(_context(_task("pw")))[0].to_tvmscript("host-cpu")
    assert "T.max(conv2d_nchw_global[" in src and 'T.sblock("T_add")' not in src
    assert "yy_xx_fused" in src  # rows and columns are one vectorised pixel axis


@pytest.mark.parametrize("rule,task_id", [(cpu_depthwise_conv, t) for t in DW_TASKS[:3]] + [(cpu_pointwise_conv, "pw")])
def test_depthwise_and_pointwise_candidates_are_correct(evaluator, rule, task_id):
    task = _task(task_id)
    irs = rule.apply(_context(task))
    for ir in (irs[0], irs[-1]):
        res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_pointwise_tiles_on_rows_the_vector_does_not_divide_are_correct(evaluator):
    # 12-wide rows, 16-lane vectors: a 16-pixel tile ends mid-row (its write-back was wrong); now 48 pixels
    task = _fused_conv_bias_relu(ci=16, co=16, hw=12, k=1)
    irs = cpu_pointwise_conv.apply(_context(task))
    assert irs
    for ir in irs:
        res = evaluator.evaluate(task, ir.to_tvmscript("host-cpu"), measure=False)
        assert res.compiled and res.correct, (ir.notes["knobs"], res.failure, res.error)


def test_pointwise_tile_on_28_wide_rows_keeps_its_accumulators_in_registers(evaluator):
    """28-wide rows make the row-aligned pixel tile 112 pixels (7 vectors of 16): 8 channels x 7 vectors spilled
    (ResNet-50's 512->128 1x1 on 28x28 ran 9 GFLOP/s); the channels per tile shrink to 8 accumulator vectors at most."""
    task = _fused_conv_bias_relu(ci=32, co=16, hw=28, k=1)
    irs = cpu_pointwise_conv.apply(_context(task))
    assert irs
    for ir in irs:
        splits = [s.args["factors"][-1] for s in ir.schedule.steps if s.op == "split"]
        pixels, channels = splits[0], splits[1]
        assert pixels % 28 == 0 and channels * -(-pixels // 16) <= 8  # 16-lane vectors: 8 zmm, (ir.notes["knobs"], splits)
    res = evaluator.evaluate(task, irs[0].to_tvmscript("host-cpu"), measure=False)
    assert res.compiled and res.correct, (res.failure, res.error)


def test_pointwise_loop_order_streams_the_smaller_tensor():
    """The first variant (what the quick pass takes) puts pixels outermost when the input outweighs the weight."""
    wide = cpu_pointwise_conv.apply(_context(_fused_conv_bias_relu(ci=64, co=16, hw=16, k=1)))  # 256 px > 16 co
    deep = cpu_pointwise_conv.apply(_context(_fused_conv_bias_relu(ci=64, co=512, hw=16, k=1)))  # 256 px < 512 co
    assert wide[0].notes["knobs"]["outer"] == "pixels" and deep[0].notes["knobs"]["outer"] == "channels"
