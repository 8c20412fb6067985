"""`leka optimize --list-ops` says what imports and how; an operator outside it keeps its one-line error."""
from __future__ import annotations

from leka.cli.main import main
from tests.onnx_vs_ort import save


def test_list_ops_names_each_route(capsys):
    assert main(["optimize", "--list-ops", "--tsv"]) == 0
    rows = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in capsys.readouterr().out.splitlines()
            if line.count("\t") == 2}
    assert rows[("ai.onnx", "LSTM")] == rows[("ai.onnx", "GRU")] == "unrolled"
    assert rows[("ai.onnx", "QLinearConv")] == rows[("com.microsoft", "QLinearAdd")] == "rewritten"
    assert rows[("ai.onnx", "LayerNormalization")] == rows[("ai.onnx", "Gelu")] == "frontend"
    assert ("ai.onnx", "Celu") not in rows


def test_unlisted_operator_is_one_line_error_naming_the_node(tmp_path, capsys):
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info
    node = helper.make_node("QLinearSigmoid", ["x", "s", "z", "s", "z"], ["y"], name="qsig", domain="com.microsoft")
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]), helper.make_tensor("z", TensorProto.UINT8, [], [0])]
    path = save(tmp_path / "m.onnx", [node], [vi("x", TensorProto.UINT8, [4])], [vi("y", TensorProto.UINT8, [4])],
                inits, ms_opset=True)
    assert main(["optimize", str(path), "--budget", "minutes=1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unsupported operator com.microsoft.QLinearSigmoid (node 'qsig', output y)" in err
    assert main(["optimize"]) == 2
    assert "give MODEL" in capsys.readouterr().err
