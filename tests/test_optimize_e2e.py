"""leka optimize end to end: a model in, an artifact out that `leka run` executes and that matches ONNX
Runtime; the tuning db makes a second run free; --resume continues an interrupted run; cuda builds here."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def gemv_model(path: Path) -> Path:
    """x(1,1024) -> 2x [MatMul 1024x1024 + Add + Relu] (one kernel, called twice) -> MatMul 1024x16 -> y.
    The GEMVs dominate, and dlight's CPU GEMV rule beats the unscheduled build by far more than noise."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    inits, nodes, x = [], [], "x"
    for i, (k, n) in enumerate(((1024, 1024), (1024, 1024), (1024, 16))):
        inits += [numpy_helper.from_array((rng.standard_normal((k, n)) * (2 / k) ** 0.5).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        x = f"a{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _optimize(model: Path, out: Path, db: Path, *extra: str) -> dict:
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(db), "--method", "tvm-dlight",
               "--budget", "compiles=8,measurements=8", "--time-s", "0", "--quiet", *extra])
    assert rc == 0
    return json.loads((out / "manifest.json").read_text())


def _seed(db: Path, model: Path, relu_floor: str = "0.0") -> str:
    """Put a hand-scheduled GEMV (parallel over outputs) in the db as the tuned kernel; relu_floor != 0.0
    makes it a wrong one (max(x, 0.5)) that re-verification must catch. Returns the kernel key."""
    from tvm import s_tir

    from leka.optimize.db import TuningDB, Winner, target_key
    from leka.optimize.extract import kernel_specs, make_task
    from leka.optimize.importer import import_model
    from leka.targets import get_target

    spec = next(s for s in kernel_specs(import_model(model)[1]) if s.weight == 2)
    sch = s_tir.Schedule(make_task(spec, "host-cpu").build())
    sch.parallel(sch.get_loops(sch.get_sblock("matmul"))[1])
    src = sch.mod.script().replace("T.float32(0.0))", f"T.float32({relu_floor}))")
    with TuningDB(db) as tdb:
        tdb.put(Winner(spec.key, spec.task_id, src, 2.0, 1.0, 2.0, "hand", "seed", None, {}),
                target_key(get_target("host-cpu")))
    return spec.key


def test_optimize_run_reuse_resume(tmp_path, capsys):
    model, db = gemv_model(tmp_path / "gemv.onnx"), tmp_path / "tuning.db"
    _seed(db, model)
    m1 = _optimize(model, tmp_path / "a.leka", db)
    gemv = next(k for k in m1["kernels"] if k["weight"] == 2)
    assert gemv["decision"] == "reused from db: replaced" and gemv["method"] == "hand", gemv
    assert m1["verification"]["status"] == "passed" and len(m1["verification"]["distributions"]) >= 2
    assert m1["budget"]["spent"] == {}  # the db entry cost nothing; the small kernel has < 2 % share

    # leka run, in a process where TVM loads its runtime library only and the compiler side is blocked
    import onnxruntime as ort

    x = np.random.default_rng(5).standard_normal((1, 1024)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    blocker = ("import sys, importlib.abc\n"
               "BLOCK = ('tvm.relax', 'tvm.s_tir', 'leka.compiler', 'leka.optimize.importer', 'onnx', 'onnxruntime')\n"
               "class B(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if any(name == b or name.startswith(b + '.') for b in BLOCK): raise ImportError(name)\n"
               "sys.meta_path.insert(0, B())\n"
               "from leka.cli.main import main\n"
               "rc = main(sys.argv[1:])\n"
               "assert not any('libtvm_compiler' in ln for ln in open('/proc/self/maps')), 'compiler loaded'\n"
               "sys.exit(rc)\n")
    env = {**os.environ, "TVM_USE_RUNTIME_LIB": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", blocker, "run", str(tmp_path / "a.leka"), "--inputs",
                        str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"), "--check", "--time-runs", "3",
                        "--json"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    said = json.loads(r.stdout)  # --json: stdout is the report alone
    assert said["check"]["passed"] and said["latency"]["runs"] == 3 and said["outputs"]["y"]["shape"] == [1, 16]
    got = np.load(tmp_path / "out.npz")["y"]
    exp = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, exp, rtol=1e-3, atol=1e-4 * np.abs(exp).max())

    # an interrupted run is resumed under its own id and re-tunes nothing that finished
    from leka.optimize.db import TuningDB, target_key
    from leka.targets import get_target

    with TuningDB(db) as tdb:
        rid, _ = tdb.start_run(m1["model"]["sha256"], target_key(get_target("host-cpu")), "tvm-dlight", False)
        tdb.finish_run(rid, "interrupted")
    m2 = _optimize(model, tmp_path / "a.leka", db, "--resume")  # a.leka is a leka artifact: replaced
    assert m2["run_id"] == rid and m2["budget"]["spent"] == {}
    # --resume RUN names the run (a prefix is enough); --json prints the manifest on stdout
    with TuningDB(db) as tdb:
        rid2, _ = tdb.start_run(m1["model"]["sha256"], target_key(get_target("host-cpu")), "tvm-dlight", False)
        tdb.finish_run(rid2, "interrupted")
    capsys.readouterr()
    m3 = _optimize(model, tmp_path / "a.leka", db, "--resume", rid2[:-2], "--json")
    said = json.loads(capsys.readouterr().out)
    assert m3["run_id"] == rid2 == said["manifest"]["run_id"] and said["status"] == "written"
    assert main(["optimize", str(model), "-o", str(tmp_path / "a.leka"), "--db", str(db), "--method", "tvm-dlight",
                 "--resume", "opt-nope"]) == 2


def test_wrong_db_entry_is_caught_and_the_kernel_tuned(tmp_path):
    model, db = gemv_model(tmp_path / "gemv.onnx"), tmp_path / "tuning.db"
    key = _seed(db, model, relu_floor="0.5")
    m = _optimize(model, tmp_path / "a.leka", db)
    gemv = next(k for k in m["kernels"] if k["key"] == key)
    assert gemv["decision"].startswith("tuned") and gemv["method"] == "tvm-dlight", gemv
    assert m["budget"]["spent"].get("compiles", 0) >= 1 and m["verification"]["status"] == "passed"
    from leka.optimize.db import TuningDB, target_key
    from leka.targets import get_target

    with TuningDB(db) as tdb:  # the wrong entry is gone (replaced by this run's decision, or by nothing)
        entry = tdb.get(key, target_key(get_target("host-cpu")))
    assert entry is None or (entry.method == "tvm-dlight" and entry.run_id == m["run_id"])


def test_cuda_target_builds_an_artifact_with_its_check(tmp_path, capsys):
    from leka.targets import get_target

    model = gemv_model(tmp_path / "gemv.onnx")
    rc = main(["optimize", str(model), "--target", "cuda", "-o", str(tmp_path / "c.leka"), "--db",
               str(tmp_path / "t.db"), "--quiet"])
    assert rc == 0
    m = json.loads((tmp_path / "c.leka" / "manifest.json").read_text())
    assert m["target"]["family"] == "cuda" and m["verification"]["status"] == "not run"
    assert (tmp_path / "c.leka" / "model.so").stat().st_size > 0
    assert set(np.load(tmp_path / "c.leka" / "check" / "expected.npz").files) == {"y"}
    if get_target("cuda").runnable:
        return  # the rest is what a machine without a GPU says
    said = capsys.readouterr().out
    assert "--remote" in said and "docs/cuda.md" in said  # what tunes the kernels instead
    assert all("--remote" in k["decision"] and "ran out of time" not in k["decision"] for k in m["kernels"])
    assert main(["run", str(tmp_path / "c.leka"), "--check"]) == 3  # no GPU: said so, not an internal error
    err = capsys.readouterr().err
    assert "no CUDA GPU" in err and "leka gpu-bundle" in err and "--remote" in err and "docs/cuda.md" in err


def test_cuda_builds_replay_the_model_as_a_cuda_graph(tmp_path):
    """CUDA builds (the artifact and its dlight baseline alike) capture the model's kernel launches in a CUDA
    graph (MobileNetV3-small on an H100: 0.41 -> 0.35 ms with dlight's kernels); CPU builds do not."""
    from leka.optimize.build_job import compile_model
    from leka.optimize.importer import import_model
    from leka.targets import get_target

    _loaded, fused = import_model(str(gemv_model(tmp_path / "gemv.onnx")), {})
    assert "vm.builtin.cuda_graph.run_or_capture" in compile_model(fused, get_target("cuda")).as_text()
    assert "cuda_graph" not in compile_model(fused, get_target("host-cpu")).as_text()


@pytest.mark.slow
def test_leka_agent_optimises_the_kws_model(tmp_path):
    from leka.optimize.demo_models import write

    model = write("kws-dscnn", tmp_path)
    rc = main(["optimize", str(model), "-o", str(tmp_path / "kws.leka"), "--db", str(tmp_path / "t.db"),
               "--budget", "minutes=2", "--time-s", "0.5", "--quiet"])
    assert rc == 0
    m = json.loads((tmp_path / "kws.leka" / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed"
    assert {"optimized", "tvm-naive", "tvm-dlight", "onnxruntime"} <= set(m["latency"])
    assert any(k["agent_run"] for k in m["kernels"])


def tiny_matmul_model(path: Path) -> Path:
    """x(64,256) -> MatMul 256x256 -> Relu -> y: one kernel whose unscheduled build is far slower than a tuned one."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array((np.random.default_rng(1).standard_normal((256, 256)) * 0.06).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                          "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])], initializer=[w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_default_method_tunes_a_kernel_for_real(tmp_path, monkeypatch):
    """`leka optimize` with its default method (the LEKA agent, offline proposer), as `make demo` runs it: the one
    kernel is searched with real compiles and measurements, replaced, and the model verified against ONNX Runtime."""
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    out = tmp_path / "tiny.leka"
    assert main(["optimize", str(tiny_matmul_model(tmp_path / "tiny.onnx")), "-o", str(out),
                 "--budget", "compiles=3,measurements=3", "--time-s", "0", "--quiet"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    [k] = m["kernels"]
    assert m["method"] == k["method"] == "leka" and k["agent_run"]
    assert k["detail"]["spent"]["compiles"] >= 1 and k["detail"]["spent"]["measurements"] >= 1
    assert k["decision"] == "tuned: replaced" and k["speedup"] > 1.0
    assert m["verification"]["status"] == "passed"
