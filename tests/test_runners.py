"""leka.runners (llvm, pyopencl, cuda, build-only) and leka.remote jobs (run_job with the TVM runtime only)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from leka.compiler import build, default_schedule
from leka.errors import NotRunnableError
from leka.remote.job import parse_candidate
from leka.runners import RunnerError, get_runner
from leka.targets import get_target
from benchmark.examples import tasks as _example_tasks

ROOT = Path(__file__).resolve().parents[1]


def get_task(task_id: str):
    return {t.id: t for t in _example_tasks()}[task_id]

needs_opencl = pytest.mark.skipif(not get_target("opencl-pocl").runnable, reason="no OpenCL device (PoCL)")


def _run(art, target: str, task_id: str, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    task = get_task(task_id)
    inputs = task.generate_inputs(np.random.default_rng(seed), "normal")
    nan_outs = [np.full(o.shape, np.nan, o.dtype) for o in task.outputs]
    loaded = get_runner(target).load(art)
    loaded.upload(inputs + nan_outs)
    loaded.run()
    got = loaded.download()
    assert len(got) == len(task.args)
    for before, after in zip(inputs, got):
        np.testing.assert_array_equal(before, after)  # inputs come back unchanged
    return got[len(inputs):], task.run_reference(inputs)


def _example(target: str, name: str):
    return build(parse_candidate((ROOT / "examples" / target / f"{name}.py").read_text()), target)


@pytest.mark.parametrize("name,task_id", [("matmul", "ex-matmul-256"), ("softmax", "ex-softmax-512x384"),
                                          ("dwconv3x3", "ex-dwconv3x3-kws")])
def test_llvm_runner_matches_numpy(name, task_id):
    art = _example("host-cpu", name)
    (got,), (ref,) = _run(art, "host-cpu", task_id)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())
    loaded = get_runner("host-cpu").load(art)
    loaded.upload(get_task(task_id).generate_inputs(np.random.default_rng(1), "uniform")
                  + [np.zeros(o.shape, o.dtype) for o in get_task(task_id).outputs])
    assert 0 < loaded.time(2) < 1.0


@needs_opencl
@pytest.mark.parametrize("name,task_id", [("matmul", "ex-matmul-256"), ("softmax", "ex-softmax-512x384")])
def test_opencl_runner_matches_numpy(name, task_id):
    art = _example("opencl-pocl", name)
    (got,), (ref,) = _run(art, "opencl-pocl", task_id)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


@needs_opencl
def test_opencl_runner_replays_multi_kernel_with_workspaces():
    # Naive softmax: 4 kernels (max, exp, sum, normalise) through 2 global workspaces TVM's host allocates.
    art = build(default_schedule(get_task("ex-softmax-512x384").build(), "opencl-pocl"), "opencl-pocl")
    assert len(art.kernels) == 4 and len(art.workspaces) == 2
    (got,), (ref,) = _run(art, "opencl-pocl", "ex-softmax-512x384", seed=3)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)
    loaded = get_runner("opencl-pocl").load(art)
    loaded.upload([np.zeros((512, 384), np.float32)] * 2)
    assert loaded.time(2) > 0


@needs_opencl
def test_opencl_runner_returns_exactly_what_the_kernel_wrote():
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"),
             C: T.Buffer((256, 256), "float32")):
        for bx in T.thread_binding(128, thread="blockIdx.x"):  # only the first 128 rows
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                C[bx, tx] = A[bx, tx] + B[bx, tx]

    art = build(tvm.IRModule({"main": main}), "opencl-pocl")
    assert art.kernels[0].grid == (128, 1, 1) and art.kernels[0].block == (256, 1, 1)
    a, b = np.ones((256, 256), np.float32), np.full((256, 256), 2, np.float32)
    loaded = get_runner("opencl-pocl").load(art)
    loaded.upload([a, b, np.full((256, 256), np.nan, np.float32)])
    loaded.run()
    c = loaded.download()[2]
    assert (c[:128] == 3).all() and np.isnan(c[128:]).all()


def test_bad_arrays_are_one_line_errors():
    loaded = get_runner("host-cpu").load(_example("host-cpu", "matmul"))
    with pytest.raises(RunnerError) as e:
        loaded.upload([np.zeros((256, 256), np.float32)] * 2)
    assert "expected 3 arrays" in str(e.value)
    with pytest.raises(RunnerError) as e:
        loaded.upload([np.zeros((256, 256), np.float64)] * 3)
    assert "float32" in str(e.value) and "\n" not in str(e.value)


def test_cuda_and_build_only_are_not_runnable_here():
    if get_target("cuda").runnable:
        pytest.skip("a GPU is present")
    art = _example("cuda", "matmul")
    with pytest.raises(NotRunnableError) as e:
        get_runner("cuda").load(art)
    assert "docs/cuda.md" in str(e.value)
    cross = build(parse_candidate((ROOT / "examples/host-cpu/matmul.py").read_text()), "rpi4")
    for preset, a in (("rpi4", cross), ("jetson-orin-nano", art)):
        with pytest.raises(NotRunnableError) as e:
            get_runner(preset).load(a)
        assert "docs/targets.md" in str(e.value)


def test_relax_artifact_runs_on_cpu():
    from tests.test_compiler import _relax_add

    art = build(_relax_add(), "host-cpu")
    loaded = get_runner("host-cpu").load(art)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    loaded.upload([x])
    loaded.run()
    inputs_and_outputs = loaded.download()
    np.testing.assert_array_equal(inputs_and_outputs[-1], 2 * x)


def test_remote_job_runs_with_runtime_only(tmp_path):
    from leka.remote import make_job, read_result

    task = get_task("ex-matmul-256")
    good = make_job(task, (ROOT / "examples/host-cpu/matmul.py").read_text(), "host-cpu", tmp_path / "good",
                    trials=2, number=2, rounds=2)
    bad = make_job(task, (ROOT / "examples/bad/wrong.py").read_text(), "host-cpu", tmp_path / "bad",
                   trials=1, number=1, rounds=1)
    # run_job must not need the TVM compiler: TVM_USE_RUNTIME_LIB loads libtvm_runtime only, and
    # leka.compiler must not be imported.
    code = ("import sys, runpy; sys.argv = ['run_job'] + sys.argv[1:]; "
            "rc = 0\ntry:\n runpy.run_module('leka.remote.run_job', run_name='__main__')\n"
            "except SystemExit as e:\n rc = e.code\n"
            "assert 'leka.compiler' not in sys.modules, 'run_job imported the compiler'\nsys.exit(rc)")
    env = dict(os.environ, TVM_USE_RUNTIME_LIB="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code, str(good), str(bad)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 2
    g, b = read_result(good), read_result(bad)
    assert g["ran"] and g["correct"] and g["speedup"] > 1 and g["candidate_ms"] > 0
    assert b["ran"] and not b["correct"] and b["baseline_correct"] and b["candidate_trials"][0]["mismatches"] > 0
