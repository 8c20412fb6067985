"""Real converter output (torchvision CNNs exported by torch.onnx at old and new opsets, stored structure-only
in benchmark/models) through `leka optimize` then `leka run`, matching ONNX Runtime; shape arithmetic of old
exporters folded at import; an unsupported operator from a real quantiser named with its node."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main
from leka.optimize import real_models as rm

QUICK = "resnet18-torchscript-op9"


def test_bundled_models_are_small_structure_only_files_of_several_families_and_opsets():
    import onnx

    models = rm.available()
    sizes = [p.stat().st_size for p in models.values()]
    assert max(sizes) < 200_000 and sum(sizes) < 1_500_000, sizes
    families, opsets = set(), set()
    for name, path in models.items():
        m = onnx.load(str(path))
        assert rm.is_structure_only(m)
        prov = rm.provenance(m)
        assert prov["converter"].startswith("torch.onnx") and prov["opset"] == name.rsplit("-op", 1)[1]
        weights = [t for t in m.graph.initializer if rm._is_weight(t)]
        assert weights and all(rm._is_stripped(t) for t in weights), name
        families.add(name.split("_")[0].split("-")[0].rstrip("0123456789"))
        opsets.add(int(prov["opset"]))
    assert {"squeezenet", "inception", "googlenet", "resnet", "mobilenet", "shufflenet", "regnet"} <= families
    assert min(opsets) <= 9 and max(opsets) >= 18


def test_materialize_is_seeded_and_runs_in_onnx_runtime():
    import onnxruntime as ort
    from onnx import numpy_helper

    a, b, c = rm.load(QUICK, 0), rm.load(QUICK, 0), rm.load(QUICK, 1)
    wa, wb, wc = ({t.name: numpy_helper.to_array(t) for t in m.graph.initializer} for m in (a, b, c))
    assert all(np.array_equal(wa[k], wb[k]) for k in wa) and any(not np.array_equal(wa[k], wc[k]) for k in wa)
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
    (y,) = ort.InferenceSession(a.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"input": x})
    assert y.shape == (1, 1000) and np.isfinite(y).all() and 0.1 < y.std() < 1e3  # role-scaled weights: O(1)
    # converters fold batch norm into the convolutions in eval mode; an unfolded one gets positive variances
    var = rm._draw(np.random.default_rng(0), (64,), ("BatchNormalization", 4, None))
    assert (var > 0).all()


def test_structure_only_file_is_a_one_line_error(tmp_path, capsys):
    rc = main(["optimize", str(rm.available()[QUICK]), "-o", str(tmp_path / "o.leka"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "structure-only model" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.leka").exists()


@pytest.mark.slow  # import + default build of the whole ResNet-18: ~10 s at load 3, 75 s at load 10 on 2 cores
def test_dynamically_quantised_resnet_imports_and_matches_onnxruntime(tmp_path):
    """ONNX Runtime's dynamic quantiser emits DynamicQuantizeLinear + ConvInteger (once refused as an
    unsupported operator; now rewritten by leka/optimize/rewrite_quant.py): it builds and agrees with ORT."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from tests.onnx_vs_ort import run_both

    src = rm.write(QUICK, tmp_path)
    quantize_dynamic(str(src), str(tmp_path / "q.onnx"), op_types_to_quantize=["Conv"], weight_type=QuantType.QUInt8)
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
    (want,), (got,) = run_both(tmp_path / "q.onnx", {"input": x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())  # measured: 6.1e-5 of 82


def channel_split_model(path: Path) -> Path:
    """x(1,8,4,4) -> Slice of the first half of the channels, with its end computed the TorchScript way
    (Shape -> Gather -> Div, opset 11) -> Relu. TVM's frontend emits a dynamic slice for it unfolded."""
    import onnx
    from onnx import TensorProto, helper

    def const(name, value):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [len(value)],
                                                                                value))

    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("one", [1]), const("two", [2]), const("zero", [0]),
             helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
             helper.make_node("Div", ["c", "two"], ["half"]),
             helper.make_node("Slice", ["x", "zero", "half", "one"], ["h"], name="split"),
             helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    return path


def test_shape_arithmetic_of_old_exporters_is_folded(tmp_path):
    import tvm
    from tvm import relax

    from leka.optimize.importer import fold_shape_arithmetic, import_model, load_model

    path = channel_split_model(tmp_path / "split.onnx")
    folded = fold_shape_arithmetic(load_model(path).model, {"x": [1, 8, 4, 4]})
    assert [n.op_type for n in folded.graph.node].count("Shape") == 0
    _, fused = import_model(path)  # legalisation rejected the unfolded dynamic slice
    ex = tvm.compile(fused, target="llvm")
    x = np.random.default_rng(0).standard_normal((1, 8, 4, 4)).astype(np.float32)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(), np.maximum(x[:, :4], 0))


def _optimize_then_run(name: str, tmp_path: Path, budget: str) -> dict:
    model = rm.write(name, tmp_path)
    out = tmp_path / f"{name}.leka"
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(tmp_path / "t.db"), "--budget", budget,
               "--time-s", "0", "--quiet"])
    assert rc == 0
    assert main(["run", str(out), "--check"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["verification"]["status"] == "passed" and manifest["model"]["opset"] == int(name.rsplit("op", 1)[1])
    return manifest


def test_a_real_torchvision_export_optimises_and_runs(tmp_path, capsys):
    """One quick model: import, profile, build, verify vs ONNX Runtime on 4 input sets, `leka run --check`
    (the budget rounds to nothing per kernel: the tuning path is the slow test's and test_optimize_e2e's)."""
    _optimize_then_run(QUICK, tmp_path, "compiles=2")
    assert "check passed: logits max abs error" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(rm.available()))
def test_every_real_model_optimises_and_runs(name, tmp_path):
    manifest = _optimize_then_run(name, tmp_path, "minutes=0.5,compiles=8")
    budgeted = [k for k in manifest["kernels"] if k["budget"]]
    assert all(k["decision"].startswith(("tuned", "reused")) for k in budgeted), budgeted


def test_a_frontend_failure_names_the_node(tmp_path):
    """An operator the frontend has but cannot convert as used (MaxRoiPool with 4-D rois): the error names the
    node being converted."""
    import onnx
    from onnx import TensorProto, helper

    from leka.optimize import OptimizeError
    from leka.optimize.importer import import_model

    node = helper.make_node("MaxRoiPool", ["x", "x"], ["y"], name="roi", pooled_shape=[2, 2])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2, 2])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "r.onnx"))
    with pytest.raises(OptimizeError, match=r"frontend failed on node 'roi' \(MaxRoiPool, output y\): .*rois"):
        import_model(tmp_path / "r.onnx")
