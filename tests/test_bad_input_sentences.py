"""The second ring (issue 21), bad input that deserves a sentence: each case was an internal error (exit 1) or
read a file it should not have; now a one-line error with exit 2 (or it works, for a model whose weights lie
beside it). Cases as in tests/adversarial (README, "Second ring")."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main

from one_line import one_line_error
from leka.errors import LekaError




def test_a_split_name_is_never_a_path(tmp_path, capsys):
    """attack: a split name with `../` reaching a JSON file elsewhere; expect: exit 2, the file not read (before:
    any JSON outside benchmark/splits/ was read as a split)."""
    from leka.bench.splits import SPLITS_DIR

    (tmp_path / "evil.json").write_text(json.dumps({"test": {"tasks": ["ex-matmul-256"]}}))
    rel = os.path.relpath(tmp_path / "evil", SPLITS_DIR)
    assert main(["bench", "list", "--split", f"{rel}:test", "--json"]) == 2
    one_line_error(capsys, "expected dev or test")


def test_experiment_levels_must_be_a_list_of_levels(tmp_path, capsys):
    """attack: `levels = 5` in an experiment config; expect: exit 2 naming levels (before: internal error)."""
    cfg = tmp_path / "x.toml"
    cfg.write_text('name = "x"\nsplit = "test"\ntargets = ["host-cpu"]\nlevels = 5\n'
                   '[[method]]\nlabel = "naive"\nmethod = "tvm-naive"\n')
    assert main(["experiment", "run", str(cfg), "--store", str(tmp_path / "r.sqlite")]) == 2
    one_line_error(capsys, "levels must be a list")


@pytest.mark.parametrize("kind", ["not-sqlite", "truncated"])
def test_a_broken_results_store_isone_line_error(tmp_path, capsys, kind):
    """attack: a results store that is not SQLite, or one cut short; expect: exit 2 naming the file."""
    from leka.bench.store import ResultStore

    db = tmp_path / "r.sqlite"
    if kind == "not-sqlite":
        db.write_bytes(b"not a database at all\n" * 200)
    else:
        with ResultStore(db) as store:
            for i in range(200):
                store.create_run("tvm-naive", "host-cpu", {"i": i, "pad": "x" * 500})
        os.truncate(db, 1024)  # keep the header page only
        for extra in tmp_path.glob("r.sqlite-*"):
            extra.unlink()
    assert main(["bench", "runs", "--store", str(db)]) == 2
    one_line_error(capsys, str(db))


def _model_with_external_weights(folder: Path, location: str = "w.bin") -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    w = numpy_helper.from_array(np.arange(64 * 8, dtype=np.float32).reshape(64, 8) / 100, "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], initializer=[w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(model, str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)
    return folder / "m.onnx"


def test_external_weights_are_read_from_the_models_folder(tmp_path, monkeypatch):
    """attack: weights stored beside the model, the command run from another folder (before: their location
    resolved against the working directory); expect: read from the model's folder."""
    from onnx import numpy_helper

    from leka.optimize.importer import load_model

    path = _model_with_external_weights(tmp_path / "model")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    loaded = load_model(path)
    w = numpy_helper.to_array(loaded.model.graph.initializer[0])
    assert w.shape == (64, 8) and w[1, 0] == pytest.approx(0.08)


def test_external_weights_outside_the_models_folder_are_refused(tmp_path):
    """attack: an external-data location that leaves the model's folder; expect: one-line refusal."""
    from leka.optimize.importer import load_model

    import onnx

    path = _model_with_external_weights(tmp_path / "model")
    (tmp_path / "model" / "w.bin").rename(tmp_path / "secret.bin")  # the bytes exist, outside the folder
    model = onnx.load(str(path), load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "../secret.bin"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(LekaError, match="external weight data"):
        load_model(path)


def test_a_model_input_of_16_gib_is_refused(tmp_path):
    """attack: a model input declared 1x65536x65536 float32; expect: refused at load, before any allocation."""
    import onnx
    from onnx import TensorProto, helper

    from leka.optimize.importer import load_model

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "big",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 65536, 65536])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 65536, 65536])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "big.onnx"))
    with pytest.raises(LekaError, match="over the .*-byte limit of one input"):
        load_model(tmp_path / "big.onnx")


def test_a_lone_surrogate_goes_back_to_the_model_as_a_tool_error():
    """attack: a codeloop write_file whose content holds a lone surrogate (valid JSON, not UTF-8); expect: a
    tool error to the model, nothing written (before: the compile that followed raised, ending the attempt)."""
    from baselines.workspace import PROGRAM, Workspace
    from leka.targets import get_target
    from leka.tasks import get_task

    def evaluate(source: str, measure: bool) -> dict:
        source.encode("utf-8")  # as the evaluator's candidate hash and wire do
        return {"compiled": False, "correct": False, "failure": "compile_error", "error": "not a kernel"}

    ws = Workspace(get_task("ex-matmul-256"), get_target("host-cpu"), evaluate, None)
    before = ws.files[PROGRAM]
    reply = ws.call("write_file", {"path": PROGRAM, "content": "x = '\udcff'\n"})
    assert reply.startswith("error: write_file:") and "not UTF-8" in reply, reply
    assert ws.files[PROGRAM] == before
    assert ws.call("compile", {"path": PROGRAM}).startswith("compile error")
