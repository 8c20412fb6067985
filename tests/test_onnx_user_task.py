"""A user's ONNX model with its weights inside the file is a task that validates and runs (weights passed
as inputs with the file's values); bad files and dynamic shapes fail in one line naming the fix."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main
from leka.errors import LekaError
from leka.tasks.onnx_task import onnx_task


def _model(path: Path, batch: int | str = 1) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "conv/W"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "conv/B"),
             numpy_helper.from_array((rng.standard_normal((4, 8)) * 0.2).astype(np.float32), "fc.W")]
    nodes = [helper.make_node("Conv", ["x", "conv/W", "conv/B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fc.W"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "user",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])], initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_weights_become_inputs_with_the_files_values(tmp_path):
    t = onnx_task(_model(tmp_path / "m.onnx"), id="l3-user-m", domain="vision")
    assert [a.name for a in t.inputs] == ["x", "conv_W", "conv_B", "fc_W"] and t.outputs[0].shape == (1, 4)
    ins = t.generate_inputs(np.random.default_rng(1), "normal")
    again = t.generate_inputs(np.random.default_rng(2), "heavy")
    assert not np.array_equal(ins[0], again[0]) and all(np.array_equal(a, b) for a, b in zip(ins[1:], again[1:]))
    assert np.asarray(t.reference(*ins)).shape == (1, 4)


def test_user_onnx_task_validates_through_the_cli(tmp_path, capsys):
    _model(tmp_path / "m.onnx", batch="N")
    (tmp_path / "user_model.py").write_text(
        "from pathlib import Path\nfrom leka.tasks.onnx_task import onnx_task\n"
        "TASKS = [onnx_task(Path(__file__).with_name('m.onnx'), id='l3-user-model', domain='vision',\n"
        "                   shapes={'x': (2, 3, 16, 16)})]\n")
    assert main(["bench", "validate", "--tasks", str(tmp_path), "--task", "l3-user-model", "--trials", "2"]) == 0, \
        capsys.readouterr()


@pytest.mark.parametrize("make, expect", [
    (lambda p: _model(p / "d.onnx", batch="N"), "shapes={'x': (1, 3, 16, 16)}"),
    (lambda p: (p / "bad.onnx").write_bytes(b"not a model") and p / "bad.onnx", "not an ONNX model"),
    (lambda p: p / "missing.onnx", "no such file"),
])
def test_bad_models_fail_in_one_line_with_the_fix(tmp_path, make, expect):
    with pytest.raises(LekaError) as e:
        onnx_task(make(tmp_path), id="l3-x", domain="vision")
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_weights_as_constants_are_refused_with_the_fix(tmp_path, capsys):
    (tmp_path / "m.onnx").write_bytes(_model(tmp_path / "m.onnx").read_bytes())
    (tmp_path / "naive.py").write_text(
        "from pathlib import Path\nimport onnx\nfrom leka.tasks import ArgSpec, Task\n"
        "M = onnx.load(str(Path(__file__).with_name('m.onnx')))\n"
        "def build():\n    from tvm.relax.frontend.onnx import from_onnx\n    return from_onnx(M)\n"
        "TASKS = [Task(id='l3-user-naive', pattern='naive', level=3, domain='vision',\n"
        "    args=(ArgSpec('x', (1, 3, 16, 16), 'float32'), ArgSpec('y', (1, 4), 'float32', role='output')),\n"
        "    build=build, reference=lambda x: x[:, :4, 0, 0], flops=1, bytes=1)]\n")
    assert main(["bench", "validate", "--tasks", str(tmp_path / "naive.py"), "--task", "l3-user-naive"]) == 1
    assert "leka.tasks.onnx_task.onnx_task" in capsys.readouterr().out


def _lstm(p: Path) -> Path:
    from tests.test_optimize_rnn import rnn_model

    return rnn_model(p / "lstm.onnx", "LSTM", direction="bidirectional", init_h=True)[0]


def _gru(p: Path) -> Path:
    from tests.test_optimize_rnn import rnn_model

    return rnn_model(p / "gru.onnx", "GRU", linear_before_reset=1)[0]


def _qlinearconv(p: Path) -> Path:
    from tests.test_optimize_quant import qlinearconv_model

    return qlinearconv_model(p / "qconv.onnx", per_channel=True)[0]


@pytest.mark.parametrize("make", [_lstm, _gru, _qlinearconv], ids=["lstm", "gru", "qlinearconv"])
def test_rewritten_models_are_tasks_whose_naive_build_matches_ort(tmp_path, make, capsys):
    """The rewrites `leka optimize` applies (LSTM/GRU unrolled, QLinearConv expanded) apply to an ONNX task:
    its weights are the rewritten model's initializers, and the naive build agrees with ONNX Runtime on the
    file itself (correctness checked, not build-only)."""
    import json

    import onnx

    path = make(tmp_path)
    tid = f"l3-user-{path.stem}"  # task ids are process-wide
    t = onnx_task(path, id=tid, domain="speech-audio")
    n_file = len(onnx.load(str(path)).graph.initializer)
    assert len(t.inputs) - 1 > n_file, "the rewrites add initializers, which become weight inputs"
    (tmp_path / "rewritten.py").write_text(
        "from pathlib import Path\nfrom leka.tasks.onnx_task import onnx_task\n"
        f"TASKS = [onnx_task(Path(__file__).with_name({path.name!r}), id={tid!r}, domain='vision')]\n")
    capsys.readouterr()
    assert main(["bench", "validate", "--tasks", str(tmp_path / "rewritten.py"), "--task", tid,
                 "--trials", "2", "--json"]) == 0, capsys.readouterr()
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["ok"] and r["status"] != "build_only", r
