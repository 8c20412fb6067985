"""leka optimize, fast part: import and extraction, budget split, tuning db, verification verdicts, and every
bad input as a one-line error with no partial artifact."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main
from leka.optimize import OptimizeError, VerificationError


def tiny_model(path: Path, dynamic: bool = False, op: str = "Relu") -> Path:
    """x(1,3,16,16) -> Conv 3->8 3x3 + Relu -> Conv 8->8 3x3 + Relu (same structure twice: shared kernel
    only when shapes match) -> Flatten -> MatMul 2048x10 + Add -> y. Weights are initializers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (8, 8, 3, 3), 0.15),
             init("b2", (8,), 0.1), init("w3", (8, 8, 3, 3), 0.15), init("b3", (8,), 0.1),
             init("wf", (2048, 10), 0.03), init("bf", (10,), 0.1)]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
             helper.make_node(op, ["c1"], ["r1"], name="act1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **conv),
             helper.make_node("Relu", ["c2"], ["r2"], name="act2"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3", **conv),
             helper.make_node("Relu", ["c3"], ["r3"], name="act3"),
             helper.make_node("Flatten", ["r3"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "wf"], ["m"], name="fc"),
             helper.make_node("Add", ["m", "bf"], ["y"], name="bias")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N" if dynamic else 1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N" if dynamic else 1, 10])
    g = helper.make_graph(nodes, "tiny", [x], [y], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_import_and_extract_dedups_by_structure(tmp_path):
    from leka.optimize.extract import kernel_specs, make_task
    from leka.optimize.importer import import_model

    loaded, fused = import_model(tiny_model(tmp_path / "m.onnx"))
    assert [i.name for i in loaded.inputs] == ["x"] and loaded.inputs[0].shape == (1, 3, 16, 16)
    specs = kernel_specs(fused)
    weights = {s.name: s.weight for s in specs}
    # conv2 and conv3 are the same computation on the same shapes: one kernel called twice
    conv_weights = sorted(w for n, w in weights.items() if "conv2d" in n)
    assert conv_weights == [1, 2], weights
    assert sum(weights.values()) == sum(1 for _ in _call_sites(fused))
    spec = next(s for s in specs if s.weight == 2)
    task = make_task(spec, "host-cpu")
    assert [a.role for a in task.args] == ["input", "input", "input", "output"]
    x = task.generate_inputs(np.random.default_rng(0), "normal")
    (out,) = task.run_reference(x)  # TVM's default build of the same PrimFunc, in this process
    xin, w, b = x
    ref = np.maximum(_conv3x3(xin, w) + b.reshape(1, -1, 1, 1), 0)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def _call_sites(mod):
    from tvm import relax

    sites = []
    relax.analysis.post_order_visit(mod["main"].body, lambda e: sites.append(e) if isinstance(e, relax.Call)
                                    and getattr(e.op, "name", "") == "relax.call_tir" else None)
    return sites


def _conv3x3(x, w):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def test_budget_split_by_share_skips_small_kernels():
    from leka.optimize.extract import KernelSpec
    from leka.optimize.profile import KernelProfile, split_budget

    profs = [KernelProfile(KernelSpec(str(i), f"k{i}", [f"k{i}"], 1, "", []), 1.0, share)
             for i, share in enumerate((0.7, 0.29, 0.01))]
    split_budget(profs, "minutes=10,compiles=100", quick=False)  # the quick pass: tests/test_quick_pass.py
    assert profs[0].budget == "compiles=70,minutes=7.07071"
    assert profs[1].budget.startswith("compiles=29,")
    assert profs[2].budget is None and "share" in profs[2].why_not


def test_tuning_db_keeps_the_faster_and_resumes(tmp_path):
    from leka.optimize.db import TuningDB, Winner

    with TuningDB(tmp_path / "t.db") as db:
        db.put(Winner("k", "t", "src-fast", 3.0, 1.0, 3.0, "leka", "r1", "a1", {}), "T")
        db.put(Winner("k", "t", "src-slow", 1.5, 2.0, 3.0, "leka", "r2", "a2", {}), "T")
        db.put(Winner("k", "t", None, None, None, None, "leka", "r3", None, {}), "T")
        assert db.get("k", "T").source == "src-fast" and db.get("k", "other-target") is None
        rid, resumed = db.start_run("sha", "T", "leka", resume=True)
        assert not resumed
        assert db.start_run("sha", "T", "leka", resume=True) == (rid, True)
        db.finish_run(rid, "done")
        assert db.start_run("sha", "T", "leka", resume=True)[1] is False


def test_verification_names_the_output_and_error(tmp_path):
    from leka.optimize.importer import load_model
    from leka.optimize.verify import check, input_sets, ort_outputs

    loaded = load_model(tiny_model(tmp_path / "m.onnx"))
    sets = input_sets(loaded, 2)
    expected = ort_outputs(loaded, sets)
    good = {f"{s}:0": e[0].copy() for s, e in enumerate(expected)}
    assert check(loaded, expected, good)["sets"] == 2
    bad = dict(good)
    bad["1:0"] = bad["1:0"] + 0.5
    with pytest.raises(VerificationError, match=r"output 'y' \(input set 1.*max abs error 0.5"):
        check(loaded, expected, bad)


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main(["optimize", *argv])
    err = capsys.readouterr().err
    return rc, err


@pytest.mark.parametrize("case", ["corrupt", "not_onnx", "missing", "unsupported", "dynamic", "target", "out"])
def test_bad_inputs_are_one_line_errors(case, tmp_path, capsys):
    model = tiny_model(tmp_path / "m.onnx")
    out = tmp_path / "out.leka"
    args: list[str] = []
    expect = ""
    if case == "corrupt":
        data = model.read_bytes()
        (tmp_path / "c.onnx").write_bytes(data[: len(data) // 3])
        model, expect = tmp_path / "c.onnx", "not an ONNX model"
    elif case == "not_onnx":
        (tmp_path / "t.onnx").write_text("name,value\n1,2\n")
        model, expect = tmp_path / "t.onnx", "not an ONNX model"
    elif case == "missing":
        model, expect = tmp_path / "nope.onnx", "no such file"
    elif case == "unsupported":
        model, expect = tiny_model(tmp_path / "u.onnx", op="Celu"), "unsupported operator Celu (node 'act1'"
    elif case == "dynamic":
        model, expect = tiny_model(tmp_path / "d.onnx", dynamic=True), "--shape x=1x3x16x16"
    elif case == "target":
        args, expect = ["--target", "no-such-board"], "unknown target 'no-such-board'"
    elif case == "out":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        expect = "exists and is not a leka artifact"
    rc, err = _cli(capsys, str(model), "-o", str(out), "--time-s", "0", *args)
    assert rc == 2, err
    assert expect in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.leka")]
    assert not leftovers
    if case == "out":
        assert (out / "notes.txt").read_text() == "mine"
    else:
        assert not out.exists()


def test_dynamic_model_with_shape_imports(tmp_path):
    from leka.optimize.importer import import_model, parse_shapes

    loaded, _ = import_model(tiny_model(tmp_path / "d.onnx", dynamic=True), parse_shapes(["x=1x3x16x16"]))
    assert loaded.inputs[0].shape == (1, 3, 16, 16)
    with pytest.raises(OptimizeError, match="does not fit"):
        import_model(tmp_path / "d.onnx", parse_shapes(["x=1x3x8x8x2"]))


def test_cpu_model_builds_run_main_as_machine_code():
    """CPU builds compile the model's main function (relax exec_mode "compiled": each kernel call is not a
    bytecode instruction dispatched at run time; experiments/vm_exec_mode.py measures what that saves); GPU
    builds keep the bytecode VM that CUDA graph capture needs. Same outputs either way."""
    import tvm
    from tvm.script import relax as R

    from leka.optimize.build_job import _vm_runner, compile_model, exec_mode_for
    from leka.targets import get_target

    @tvm.script.ir_module
    class Tiny:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            y = R.add(x, x)
            return y

    cpu = get_target("host-cpu")
    assert exec_mode_for(cpu) == "compiled" and exec_mode_for(get_target("cuda")) == "bytecode"
    x = np.arange(4, dtype="float32")
    outs = {}
    for mode in ("compiled", "bytecode"):
        ex = compile_model(Tiny, cpu, exec_mode=mode)
        assert ("vm_tir_func" in ex.mod["as_text"]()) == (mode == "compiled")
        outs[mode] = _vm_runner(ex)([x])[0]
    assert "vm_tir_func" in compile_model(Tiny, cpu).mod["as_text"]()  # the default on CPU
    np.testing.assert_array_equal(outs["compiled"], outs["bytecode"])
    np.testing.assert_array_equal(outs["compiled"], 2 * x)
