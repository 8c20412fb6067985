"""The GPU offline rules: each applies or declines, every proposal builds for cuda (sm_90) and Jetson (sm_87)
and is correct where it really runs here (OpenCL on PoCL, the same rules)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from leka.compiler import build
from leka.evaluator import EvalConfig, Evaluator
from leka.ir import CandidateIR
from leka.proposers.base import ProposalRequest
from leka.proposers.offline import OfflineProposer
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import (gpu_bind_spatial, gpu_cross_thread_reduction, gpu_fused_rows,
                                          gpu_shared_matmul, gpu_tensor_core_matmul, gpu_vector_elementwise)
from leka.remote.job import parse_candidate
from leka.targets import get_target
from leka.tasks import get_task

TASKS = ["l1-softmax_keys-4x128-f16", "l1-layernorm_lastdim-64x384-f16", "l1-relu6-7x7x960-f16",
         "l1-gemv-1024x1024-f16", "ex-matmul-256"]


def _proposals(task_id: str, target: str, k: int = 6):
    task = get_task(task_id)
    req = ProposalRequest("schedule", CandidateIR.initial(task), task, get_target(target), [], k=k)
    return task, OfflineProposer().propose(req)


@pytest.mark.parametrize("task_id", TASKS)
def test_gpu_proposals_build_for_cuda_and_jetson(task_id):
    for preset in ("cuda", "jetson-orin-nano"):
        task, props = _proposals(task_id, preset)
        assert props, f"no GPU proposal for {task_id}"
        for p in props:
            build(parse_candidate(p.ir.to_tvmscript(preset)), preset)


def test_rules_decline_what_is_not_theirs():
    def ctx(task_id, target="cuda"):
        task = get_task(task_id)
        return RuleContext.build(task, CandidateIR.initial(task), get_target(target), [])
    assert gpu_cross_thread_reduction.apply(ctx("l1-relu6-7x7x960-f16")) is None  # no reduction
    assert gpu_vector_elementwise.apply(ctx("l1-gemv-1024x1024-f16")) is None  # no spatial-only block
    assert gpu_shared_matmul.apply(ctx("l1-softmax_keys-4x128-f16")) is None
    assert gpu_cross_thread_reduction.apply(ctx("l1-softmax_keys-4x128-f16", "host-cpu")) is None


def _ctx(task_id: str, target: str = "cuda") -> RuleContext:
    task = get_task(task_id)
    return RuleContext.build(task, CandidateIR.initial(task), get_target(target), [])


def _nvcc(source: str, arch: str, tmp_path) -> None:
    """The device source as the GPU host compiles it (nvcc, where installed): catches codegen that TVM
    emits but nvcc rejects (the 8-lane make_longlong4 of the 2026-12-01 slice)."""
    if shutil.which("nvcc") is None:
        return
    src = tmp_path / f"k_{arch}.cu"
    src.write_text(source)
    res = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-o", str(tmp_path / "k.cubin"), str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-600:]


def _built(rule, task_id: str, tmp_path, kernels: int | None = 1) -> list:
    """Every variant of `rule` on the task: valid against the preset's limits, built for the H200 preset
    (cuda, sm_90) and the Jetson preset (sm_87), nvcc-compiled (sm_90), `kernels` launches each."""
    knobs = []
    for preset in ("cuda", "jetson-orin-nano"):
        irs = rule.apply(_ctx(task_id, preset))
        assert irs, f"{rule.NAME} declined {task_id}"
        for ir in irs:
            assert ir.validate(get_target(preset)) == []
            art = build(parse_candidate(ir.to_tvmscript(preset)), preset)
            if kernels is not None:
                assert len(art.kernels) == kernels, (ir.notes["knobs"], [k.name for k in art.kernels])
            if preset == "cuda":  # nvcc's verdict on TVM's CUDA C does not depend on the arch: once is enough
                _nvcc(art.source, get_target(preset).target["arch"], tmp_path)
            knobs.append(ir.notes["knobs"])
    return knobs


@pytest.mark.parametrize("task_id", ["l1-cosine_similarity_scores-2048x384", "l2-dense_bn_relu-1x640x128-f16",
                                     "l1-rigid_transform_points-16384-f16", "l1-softmax_keys-4x128-f16"])
def test_fused_rows_is_one_kernel(task_id, tmp_path):
    """Reductions + epilogue (cast, bn, relu, rsqrt) as one launch, not one per block (the slice lost
    ~3.5 us per extra launch to dlight); long rows reduced by warp lanes, short ones in one thread."""
    knobs = _built(gpu_fused_rows, task_id, tmp_path)
    lanes = {k["lanes"] for k in knobs}
    assert lanes == {1} if task_id.startswith("l1-rigid") else 32 in lanes


def test_fused_rows_declines_what_is_not_its():
    assert gpu_fused_rows.apply(_ctx("ex-matmul-256")) is None  # one block: nothing to fuse
    assert gpu_fused_rows.apply(_ctx("l1-relu6-7x7x960-f16")) is None  # no reduction
    assert gpu_fused_rows.apply(_ctx("l1-cosine_similarity_scores-2048x384", "host-cpu")) is None
    assert gpu_fused_rows.apply(_ctx("l1-cusum_upper-2x4096")) is None  # a scan stays serial
    # softmax: per output element each row's max and sum would be redone 128x (over REDUNDANCY); rows are
    # the softmax rows (depth 2 of the 3 output axes) instead
    assert {ir.notes["knobs"]["depth"] for ir in gpu_fused_rows.apply(_ctx("l1-softmax_keys-4x128-f16"))} == {2}



def test_fused_rows_keeps_overlapping_windows_out_of_shared_memory():
    """A 1x1 conv + SiLU feeding a 3x3 conv: each output pixel needs its producers over a 3x3 window, so the rows
    of a block overlap. In a shared buffer several threadIdx.y rows wrote the same elements while others read
    them (wrong on an H100); only the register variant (lanes = 1, each row's own copy) may fuse it."""
    irs = gpu_fused_rows.apply(_ctx("l2-c3_bottleneck_silu_nhwc-14x14x64")) or []
    assert irs and {ir.notes["knobs"]["lanes"] for ir in irs} == {1}
    row_local = gpu_fused_rows.apply(_ctx("l1-softmax_keys-4x128-f16")) or []  # row-local: lanes share a row
    assert any(ir.notes["knobs"]["lanes"] > 1 for ir in row_local)

@pytest.mark.parametrize("task_id", ["l1-attn_scores_qkt-4x128x32-f16", "l1-attn_context_pv-4x128x32", "ex-matmul-256"])
def test_shared_matmul_batched_with_epilogue(task_id, tmp_path):
    """Batched GEMMs (attention scores/context) take the shared-memory tile, the batch on blockIdx.z, the
    scale/cast epilogue in the same kernel; the padded variant's tile rows are tk + 1 words apart."""
    knobs = _built(gpu_shared_matmul, task_id, tmp_path)
    assert {"tile": 16, "tk": 16, "pad": True} in knobs
    ir = next(ir for ir in gpu_shared_matmul.apply(_ctx(task_id)) if ir.notes["knobs"]["pad"])
    assert "storage_align" in {s.op for s in ir.memory.steps}


def test_shared_matmul_declines_and_fits_the_limits():
    assert gpu_shared_matmul.apply(_ctx("l1-softmax_keys-4x128-f16")) is None
    assert gpu_shared_matmul.apply(_ctx("l1-cosine_similarity_scores-2048x384")) is None  # three reductions
    assert gpu_shared_matmul.apply(_ctx("l1-pairwise_sqdist_3d-1024x1024-f16")) is None  # k = 3: no tile
    # a 16x16 tile is 256 threads: within Mali's limit; the cooperative fetch under the thread loops binds
    # the same threadIdx axes again and is not counted twice
    for ir in gpu_shared_matmul.apply(_ctx("ex-matmul-256", "mali-g610")):
        assert ir.validate(get_target("mali-g610")) == []


def test_vector_elementwise_fp16_gather_stays_within_four_lanes(tmp_path):
    """8 fp16 lanes over rows of 3 need an int32x8 index vector (j = (8f + v) % 3), which TVM prints as
    make_longlong4 with 8 arguments; the rule keeps such tasks at 4 lanes, and rows that hold whole
    vectors (32 channels) at 8 (16-byte loads)."""
    vecs = {k["vec"] for k in _built(gpu_vector_elementwise, "l1-rigid_transform_points-16384-f16", tmp_path, None)}
    assert max(vecs) == 4
    assert 8 in {ir.notes["knobs"]["vec"] for ir in gpu_vector_elementwise.apply(_ctx("l1-add_residual_nhwc-28x28x32-f16"))}


def test_cross_thread_reduction_splits_by_a_divisor(tmp_path):
    """16 outputs x 1081 terms (23 x 47): no power of two splits the reduction, so the rule used to decline
    and the task ran 16 threads serially (3.4 ms on the H200); now 47 (and 23) threads share each sum."""
    _built(gpu_cross_thread_reduction, "l2-correlative_scan_match_score-16x1081x256", tmp_path)
    ir = gpu_cross_thread_reduction.apply(_ctx("l2-correlative_scan_match_score-16x1081x256"))[0]
    assert {"loop": "Y.i.1", "thread": "threadIdx.x"} in [s.args for s in ir.schedule.steps if s.op == "bind"]
    assert gpu_cross_thread_reduction._lanes(1081, 256) == 47 and gpu_cross_thread_reduction._lanes(1081, 32) == 23
    assert gpu_cross_thread_reduction._lanes(257, 256) == 256  # prime: no useful divisor, as before


@pytest.mark.parametrize("task_id", ["l1-sigmoid-2034x91", "l2-stft_power-25x512"])  # dev split
def test_bind_spatial_blocks_hold_a_warp_or_more(task_id):
    """185094 (2 x 3 x 30849) and 25 x 257 outputs have no power-of-two divisor above 2: the rule bound 2
    and 1 threads per block (test-split analogues ran 2-16x slower than dlight on the H200); now a divisor
    from a warp up, near each variant's preferred count."""
    irs = gpu_bind_spatial.apply(_ctx(task_id))
    for ir in irs:
        art = build(parse_candidate(ir.to_tvmscript("cuda")), "cuda")
        assert all(k.block[0] >= gpu_bind_spatial.WARP for k in art.kernels), [k.block for k in art.kernels]
    assert [gpu_bind_spatial.threads_for(185094, 1024, p) for p in (256, 128, 64)] == [273, 126, 63]
    assert gpu_bind_spatial.threads_for(31, 1024, 256) == 1 and gpu_bind_spatial.threads_for(4096, 1024, 128) == 128


CHAINED = "l2-conv2d_3x3_bn_relu_nhwc-16x16x32x32"  # dev split: conv, batch norm, relu; its output buffer is relu3


def test_chained_task_has_its_output_block():
    """A chained task writes its output into a buffer named after its last op (relu3, not the task's Y):
    that block is the output block (the GPU rules declined or split the task when none was), and the batch
    norm after the conv (a sqrt per output element) is inlined, not kept as a table."""
    infos = _ctx(CHAINED).infos
    assert [b.name for b in infos if b.writes_output] == ["relu3"]
    from leka.proposers.offline.analysis import keep_as_table
    assert not keep_as_table(next(b for b in infos if b.name == "bn2"), infos)
    assert gpu_fused_rows.apply(_ctx(CHAINED)) is not None


@pytest.mark.parametrize("rule", [gpu_bind_spatial, gpu_cross_thread_reduction])
def test_reduction_keeps_its_epilogue_in_one_kernel(rule, tmp_path):
    """conv + batch norm + relu: the epilogue computed in the reduction's thread (bind_spatial) or block
    (cross-thread, after the allreduce, from a register): one launch per module where there were three."""
    knobs = _built(rule, CHAINED, tmp_path, kernels=1)
    assert all(k.get("epilogue") for k in knobs), knobs
    # no epilogue (a softmax's normalisation spans a whole row per reduced value): the variants as before
    assert not any(ir.notes["knobs"].get("epilogue") for ir in rule.apply(_ctx("l1-softmax_keys-4x128-f16")))


def test_fused_rows_gives_a_long_row_a_wide_block(tmp_path):
    """16 rows of 8192 terms (dev split): one block of 1024 (and 512) threads per row, not a warp; the
    lane counts divide the row (LiveSchedule splits only by divisors): 800 and 640 for 32000 terms."""
    knobs = _built(gpu_fused_rows, "l2-log_softmax_gather_nll-16x8192", tmp_path)
    assert [k["lanes"] for k in knobs[:2]] == [1024, 512] and all(k["rows"] == 1 for k in knobs[:2])
    ir = gpu_fused_rows.apply(_ctx("l2-log_softmax_gather_nll-16x8192"))[0]
    assert [k.block for k in build(parse_candidate(ir.to_tvmscript("cuda")), "cuda").kernels] == [(1024, 1, 1)]
    assert gpu_fused_rows._wide_lanes(32000, 1024) == [800, 640]
    assert gpu_fused_rows._wide_lanes(8192, 4096) == [1024, 512]  # PoCL's 4096: the GPU's schedules


@pytest.mark.parametrize("task_id, rule", [(CHAINED, gpu_bind_spatial), (CHAINED, gpu_cross_thread_reduction),
                                           ("l2-log_softmax_gather_nll-16x8192", gpu_fused_rows)])
def test_fused_kernels_correct_on_pocl(task_id, rule):
    """The fused epilogues and the wide rows compute the task's outputs (OpenCL on PoCL, 2 trials)."""
    task = get_task(task_id)
    irs = rule.apply(_ctx(task_id, "opencl-pocl"))[:2]
    assert irs
    with Evaluator("opencl-pocl", EvalConfig(trials=2, measure=False, seed=0)) as ev:
        for ir in irs:
            res = ev.evaluate(task, ir.to_tvmscript("opencl-pocl"))
            assert res.correct, (ir.notes["knobs"], res.failure, res.error)


# PoCL here has no half precision: the fp32 shapes of the same patterns (+ pooling, + a residual add)
POCL_TASKS = ["l1-layernorm_lastdim-64x384", "l1-relu6-14x14x384", "l1-gemv-512x512",
              "l1-global_avgpool_nhwc-7x7x1280", "l1-add_residual_nhwc-14x14x96", "ex-softmax-512x384", "ex-matmul-256",
              "l1-cosine_similarity_scores-2048x384", "l2-dense_bn_relu-1x640x128", "l1-attn_scores_qkt-4x128x32",
              "l1-consecutive_cosine_change-1000x32", "l2-dh_forward_kinematics-6dof-256",
              "l2-correlative_scan_match_score-16x1081x256", "l2-attention_head-4x128x32"]


@pytest.mark.slow
@pytest.mark.parametrize("task_id", POCL_TASKS)
def test_gpu_proposals_correct_on_pocl(task_id):
    task, props = _proposals(task_id, "opencl-pocl", k=4)
    rules = set()
    with Evaluator("opencl-pocl", EvalConfig(trials=2, measure=False, seed=0)) as ev:
        for p in props:
            res = ev.evaluate(task, p.ir.to_tvmscript("opencl-pocl"))
            assert res.correct, (p.rationale, res.failure, res.error)
            rules.add(p.meta["rule"])
    assert rules


def test_limits_are_checked_before_building():
    """A 32x32 thread tile (1024 threads) is over Mali's 256 threads per block: validate() names the limit
    (the proposer drops such IRs before anything is built); the same IR is valid for cuda."""
    task = get_task("ex-matmul-256")
    ctx = RuleContext.build(task, CandidateIR.initial(task), get_target("mali-g610"), [])

    def wide(sk):
        i, j, k = sk.loops(ctx.infos[0].name)
        i0, i1 = sk.do("split", loop=i, factors=[None, 32])
        j0, j1 = sk.do("split", loop=j, factors=[None, 32])
        sk.do("reorder", loops=[i0, j0, i1, j1, k])
        sk.do("bind", loop=i0, thread="blockIdx.y")
        sk.do("bind", loop=j0, thread="blockIdx.x")
        sk.do("bind", loop=i1, thread="threadIdx.y")
        sk.do("bind", loop=j1, thread="threadIdx.x")
    ir = ctx.attempt("test", {}, wide)
    errs = ir.validate(get_target("mali-g610"))
    assert any("max_threads_per_block 256" in e for e in errs)
    assert not ir.validate(get_target("cuda"))


@pytest.mark.parametrize("task_id", [pytest.param("l1-attn_scores_qkt-4x128x32-f16", marks=pytest.mark.slow),
                                     "l1-linear_bias-64x512x128-f16"])
def test_tensor_core_matmul_emits_wmma(task_id, tmp_path):
    """fp16 GEMMs on sm_90 and sm_87: batched Q.K^T (B read as [j, k]: the col-major fragment) and x.W + bias
    (row-major B, bias and cast in the write-out) become one kernel of WMMA loads, mma_syncs and stores.
    nvcc compiles the first variant for sm_90 here (WMMA code takes ~20 s per compile); every variant on
    both presets is the slow test below."""
    for preset in ("cuda", "jetson-orin-nano"):
        ir = gpu_tensor_core_matmul.apply(_ctx(task_id, preset))[0]
        assert ir.validate(get_target(preset)) == []
        src = build(parse_candidate(ir.to_tvmscript(preset)), preset).source
        if preset == "cuda" and "linear_bias" in task_id:
            _nvcc(src, get_target(preset).target["arch"], tmp_path)
        for call in ("wmma::load_matrix_sync", "wmma::mma_sync", "wmma::store_matrix_sync", "wmma::fill_fragment"):
            assert call in src, (preset, call)
        intrins = {s.args["intrin"] for s in ir.schedule.steps if s.op == "tensorize"}
        trans = "_trans" if "qkt" in task_id else ""
        assert f"wmma_sync_16x16x16_f16f16f32{trans}" in intrins  # fp32 accumulation: the task casts to float32


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["l1-attn_scores_qkt-4x128x32-f16", "l1-linear_bias-64x512x128-f16"])
def test_tensor_core_matmul_every_variant_compiles(task_id, tmp_path):
    """Every tile variant, valid and nvcc-compiled for sm_90 and sm_87, one launch each (~160 s)."""
    assert len(_built(gpu_tensor_core_matmul, task_id, tmp_path)) >= 2


def test_tensor_core_matmul_declines_what_is_not_its():
    rule = gpu_tensor_core_matmul
    assert rule.apply(_ctx("l1-attn_scores_qkt-4x128x32")) is None  # fp32 operands
    assert rule.apply(_ctx("ex-matmul-256")) is None
    for preset in ("opencl-pocl", "mali-g610", "adreno-740", "jetson-nano", "host-cpu"):  # OpenCL, sm_53, CPU
        assert rule.apply(_ctx("l1-attn_scores_qkt-4x128x32-f16", preset)) is None, preset
    assert rule.apply(_ctx("l2-dense_bn_relu-1x640x128-f16")) is None  # M = 1: not a multiple of 16
    assert rule.apply(_ctx("l2-attention_head-4x128x32-f16")) is None  # two GEMMs and a softmax
    assert rule.apply(_ctx("l1-gemv-1024x1024-f16")) is None


def test_tensor_core_matmul_comes_first_among_the_proposals():
    _, props = _proposals("l1-attn_scores_qkt-4x128x32-f16", "cuda", k=4)
    assert props[0].meta["rule"] == gpu_tensor_core_matmul.NAME
