"""leka.compiler: one build() for every backend/preset, baseline schedules, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leka.compiler import CompileError, build, default_schedule
from leka.errors import LekaError
from leka.remote.job import parse_candidate
from benchmark.examples import tasks as _example_tasks

ROOT = Path(__file__).resolve().parents[1]


def get_task(task_id: str):
    return {t.id: t for t in _example_tasks()}[task_id]

EXAMPLES = sorted((ROOT / "examples").glob("*/*.py"))
GOOD = [p for p in EXAMPLES if p.parent.name in ("host-cpu", "opencl-pocl", "cuda")]
EDGE_OF = {"host-cpu": "rpi4", "cuda": "jetson-orin-nano", "opencl-pocl": "mali-g610"}


def _load(path: Path):
    return parse_candidate(path.read_text())


def test_examples_exist_with_headers():
    assert len(GOOD) == 9
    for p in GOOD + sorted((ROOT / "examples" / "bad").glob("*.py")):
        first = p.read_text().splitlines()[0]
        assert first.startswith("# leka: task=ex-") and " target=" in first, p


@pytest.mark.parametrize("path", GOOD, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_example_builds_for_its_target_and_an_edge_preset(path):
    target = path.parent.name
    for preset in (target, EDGE_OF[target]):
        art = build(_load(path), preset)
        assert art.entry == "main" and art.compile_s > 0 and art.binary_bytes > 0
        assert [p[0] for p in art.params] == [a.name for a in get_task(_task_of(path)).args]
        if art.family == "cpu":
            assert art.source_kind == "llvm-ir" and "define" in art.source and art.asm
            assert not art.kernels
        else:
            assert art.kernels, "GPU artifacts report their launches"
            k = art.kernels[0]
            assert all(g >= 1 for g in k.grid) and all(b >= 1 for b in k.block) and k.args
        json.dumps(art.to_json())  # serialisable, executable left out


def _task_of(path: Path) -> str:
    return path.read_text().split("task=", 1)[1].split()[0]


@pytest.mark.parametrize("arch", ["sm_87", "sm_90"])
def test_cuda_source_per_arch(arch):
    art = build(_load(ROOT / "examples/cuda/matmul.py"), {"kind": "cuda", "arch": arch})
    assert art.source_kind == "cuda" and "__global__" in art.source
    (k,) = art.kernels
    assert k.grid == (8, 8, 1) and k.block == (8, 8, 1) and k.args == ["A", "B", "C"]
    scopes = {a.scope for a in art.allocations}
    assert {"shared", "local"} <= scopes


def test_opencl_source_and_geometry():
    art = build(_load(ROOT / "examples/opencl-pocl/softmax.py"), "opencl-pocl")
    assert art.source_kind == "opencl" and "__kernel" in art.source
    (k,) = art.kernels
    assert k.name == "main_kernel" and k.grid == (32, 1, 1) and k.block == (16, 1, 1)
    assert any(a.scope == "local" for a in art.allocations)


def test_unscheduled_gpu_is_a_one_line_error():
    func = get_task("ex-matmul-256").build()
    for preset in ("cuda", "opencl-pocl", "jetson-nano"):
        with pytest.raises(CompileError) as e:
            build(func, preset)
        msg = str(e.value)
        assert "no thread binding" in msg and "default_schedule" in msg and "\n" not in msg


def test_unknown_target_kind_is_a_one_line_error():
    func = get_task("ex-matmul-256").build()
    with pytest.raises(LekaError) as e:
        build(func, {"kind": "vulkan"})
    assert "\n" not in str(e.value) and "vulkan" in str(e.value)
    with pytest.raises(LekaError) as e:
        build(func, "no-such-board")
    assert "\n" not in str(e.value)


def test_tvm_failure_becomes_compile_error():
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def main(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in T.thread_binding(4, thread="threadIdx.x"):
            b[i] = a[i] + T.float32(1) / T.Cast("float32", T.int8(0))  # TVM folds it: divide by zero

    with pytest.raises(CompileError) as e:
        build(tvm.IRModule({"main": main}), "cuda")
    assert "\n" not in str(e.value) and "Divide by zero" in str(e.value)


def test_naive_and_dlight_baselines():
    mm, softmax = get_task("ex-matmul-256").build(), get_task("ex-softmax-512x384").build()
    assert default_schedule(mm, "host-cpu", "dlight") is None  # dlight CPU rules: GEMV/reduction only
    assert build(default_schedule(mm, "host-cpu", "naive"), "host-cpu").family == "cpu"
    assert build(default_schedule(mm, "cuda", "dlight"), "cuda").kernels
    # Several blocks: DefaultGPUSchedule rejects them in 0.27, the hand binding takes over.
    art = build(default_schedule(softmax, "opencl-pocl", "naive"), "opencl-pocl")
    assert len(art.kernels) == 4 and {w.name for w in art.workspaces} >= {"exp"}
    assert all(k.block == (256, 1, 1) for k in art.kernels)
    with pytest.raises(LekaError):
        default_schedule(mm, "host-cpu", "fancy")


def test_export_native_and_cross(tmp_path):
    import tvm

    art = build(_load(ROOT / "examples/host-cpu/matmul.py"), "host-cpu")
    lib = art.export(tmp_path / "mm.so")
    assert lib.suffix == ".so" and tvm.runtime.load_module(str(lib))["main"] is not None
    cross = build(_load(ROOT / "examples/host-cpu/matmul.py"), "rpi4").export(tmp_path / "mm_rpi4.so")
    assert cross.exists() and cross.stat().st_size > 0  # .so with aarch64 gcc, else the object file


def test_relax_module_builds():
    art = build(_relax_add(), "host-cpu")
    assert art.is_relax and art.params == [("x", (4, 8), "float32")] and art.source


def _relax_add():
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
            with R.dataflow():
                y = R.add(x, x)
                R.output(y)
            return y

    return Mod
