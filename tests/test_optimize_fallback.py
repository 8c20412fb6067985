"""One broken winner never sinks the model (leka/optimize/fallback.py): the bisection over the replaced kernels,
and `leka optimize` writing a verified artifact whose manifest names the kernel it dropped."""
from __future__ import annotations

import json

import pytest

from leka.cli.main import main
from leka.optimize import BuildFailedError, VerificationError
from leka.optimize.fallback import settle


def _builder(bad: set[str], pairs: tuple[frozenset[str], ...] = ()):
    tried: list[list[str]] = []

    def attempt(keys: list[str], final: bool) -> tuple[list[str], bool]:
        tried.append(keys)
        broken = sorted(bad & set(keys))
        if broken:
            raise BuildFailedError(f"building the optimised model failed: {broken[0]} is an output block")
        if any(p <= set(keys) for p in pairs):
            raise VerificationError("optimised build disagrees with ONNX Runtime")
        return keys, final
    return attempt, tried


def test_settle_keeps_everything_when_the_build_passes():
    attempt, tried = _builder(set())
    s = settle(attempt, ["a", "b", "c"])
    assert s.value == (["a", "b", "c"], True) and s.dropped == {} and len(tried) == 1


@pytest.mark.parametrize("bad", [{"c"}, {"a", "h"}, {"a", "b", "c", "d", "e", "f", "g", "h"}])
def test_settle_drops_exactly_the_broken_winners(bad):
    keys = list("abcdefgh")
    attempt, tried = _builder(bad)
    s = settle(attempt, keys)
    assert set(s.dropped) == bad and set(s.kept) == set(keys) - bad
    assert s.value == (sorted(set(keys) - bad), True)  # the kept build is the final (timed) one
    assert all("output block" in why for why in s.dropped.values())
    if len(bad) == 1:
        assert len(tried) <= 2 + 2 * 3  # about log2(8) halvings, not one build per kernel


def test_settle_catches_a_pair_that_only_fails_together():
    attempt, _ = _builder(set(), pairs=(frozenset("bg"),))
    s = settle(attempt, list("abcdefgh"))
    assert list(s.dropped) == ["g"] and "disagrees" in s.dropped["g"]


def test_settle_raises_when_the_model_itself_does_not_build():
    def attempt(keys, final):
        raise BuildFailedError("building the optimised model failed: no such op")
    with pytest.raises(BuildFailedError, match="no such op"):
        settle(attempt, ["a", "b"])


def test_a_broken_winner_is_dropped_and_the_artifact_written(tmp_path, monkeypatch):
    """The GEMV kernel gets a good hand-scheduled winner, the last MatMul a winner whose module fails to build in
    the model: the artifact is written and verified with the GEMV winner, the broken one is named as dropped."""
    from leka.optimize import pipeline
    from leka.optimize.db import Winner
    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model
    from test_optimize_e2e import _seed, gemv_model

    model, db = gemv_model(tmp_path / "gemv.onnx"), tmp_path / "tuning.db"
    good_key = _seed(db, model)
    bad = next(s for s in kernel_specs(import_model(model)[1]) if s.weight == 1)

    def decide(profs, preset, opts, run_id, tdb, view):
        from leka.optimize.db import target_key

        good = tdb.get(good_key, target_key(preset))
        broken = Winner(bad.key, bad.task_id, "@T.prim_func\ndef main(:\n    pass\n", 3.0, 1.0, 3.0, "hand",
                        run_id, None, {})
        return {good_key: good, bad.key: broken}, None, "test"

    monkeypatch.setattr(pipeline, "_decide", decide)
    out = tmp_path / "deep" / "er" / "gemv.leka"  # -o makes the missing parent folders
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(db), "--time-s", "0", "--quiet"])
    assert rc == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed"
    assert [d["key"] for d in m["dropped"]] == [bad.key] and m["dropped"][0]["why"]
    kernels = {k["key"]: k for k in m["kernels"]}
    assert kernels[bad.key]["decision"].startswith("dropped")
    assert kernels[good_key]["decision"] == "reused from db: replaced"
    assert "dropped" in (out / "report.md").read_text()


def _fc_dropout_model(path):
    """Gemm -> Relu -> Dropout with its mask output, as AlexNet/ZFNet export their classifier: TVM 0.27's
    dlight cpu.Reduction raises "The block ... is an output block" on the fused kernel."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    w = nh.from_array(np.random.default_rng(0).standard_normal((64, 32)).astype("float32"), "W")
    b = nh.from_array(np.zeros(32, "float32"), "B")
    g = h.make_graph([h.make_node("Gemm", ["x", "W", "B"], ["g"]), h.make_node("Relu", ["g"], ["r"]),
                      h.make_node("Dropout", ["r"], ["y", "mask"])], "fc",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 64])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 32])], [w, b])  # the mask is read by nobody
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 11)]), path)
    return path


def test_a_kernel_dlight_rejects_still_builds_and_is_timed(tmp_path, monkeypatch):
    """light_bvlc_alexnet and light_zfnet512 at minutes=10: the tvm-dlight comparison build raised in the build
    job, the winners were blamed and bisected until the minutes ran out. dlight's rules now decline where they
    raise, and the comparison is timed with all four builds."""
    from leka.optimize import pipeline

    monkeypatch.setattr(pipeline, "_decide", lambda *a: ({}, None, "test"))
    model, out = _fc_dropout_model(tmp_path / "fc.onnx"), tmp_path / "fc.leka"
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(tmp_path / "t.db"), "--time-s", "0.05",
               "--quiet"])
    assert rc == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed" and not m["references_failed"]
    assert set(m["latency"]) == {"optimized", "tvm-naive", "tvm-dlight", "onnxruntime"}


def _reference_job(tmp_path, model) -> tuple[dict, str]:
    job = {"model": str(model), "shapes": None, "target": "host-cpu", "refs_dir": str(tmp_path / "refs")}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return job, str(path)


def test_a_comparison_build_that_fails_is_named_not_fatal(tmp_path):
    """A comparison build whose process fails (here: the model it re-imports is not ONNX) is left out with its
    error's last line; the other is timed."""
    from leka.optimize import build_job

    model = _fc_dropout_model(tmp_path / "fc.onnx")
    job, path = _reference_job(tmp_path, model)
    runners = build_job._references(job, path, result := {})
    assert list(runners) == ["tvm-naive", "tvm-dlight"] and not result
    (tmp_path / "refs" / "tvm-dlight.so").unlink()
    model.write_bytes(b"not onnx")
    runners = build_job._references(job, path, result := {})
    assert list(runners) == ["tvm-naive"]  # compiled by the first call, found in refs_dir
    assert "tvm-dlight" in result["references_failed"] and result["references_failed"]["tvm-dlight"]


def test_a_comparison_build_that_runs_away_is_cut_off(tmp_path, monkeypatch):
    """inception_v3's tvm-dlight build compiles for 190 s: a comparison build gets a share of the time left before
    the job's deadline and is cut off past it, named in references_failed; the artifact goes on."""
    import time

    from leka.optimize import build_job

    job, path = _reference_job(tmp_path, _fc_dropout_model(tmp_path / "fc.onnx"))
    monkeypatch.setattr(build_job, "REFERENCE_MIN_S", 0.05)
    job["deadline"] = time.time() + 0.6  # half of it: shorter than the child's start (it imports TVM)
    runners = build_job._references(job, path, result := {})
    assert runners == {}
    assert "cut off" in result["references_failed"]["tvm-naive"]
    assert result["references_failed"]["tvm-dlight"].startswith("not built: ")
    assert not list((tmp_path / "refs").glob("*.so"))


def test_a_comparison_cut_at_the_deadline_still_writes_the_verified_build(tmp_path, monkeypatch):
    """light_vgg19 at minutes=10: the end-to-end comparison's first round (its default build takes seconds a call)
    ran past the whole run's deadline and nothing was written. The build job leaves its untimed result before
    timing; stopped at the deadline, the verified build is written with the reason it is not timed."""
    from leka.optimize import pipeline
    from leka.optimize.clock import WholeRun

    monkeypatch.setattr(pipeline, "_decide", lambda *a: ({}, None, "test"))
    monkeypatch.setattr(WholeRun, "tuning_minutes", lambda self, *a, **k: 0.0)  # the test is the build's end
    model, out = _fc_dropout_model(tmp_path / "fc.onnx"), tmp_path / "fc.leka"
    # a round of 60 x 4 / 5 = 48 s cannot end before the run's 18 s do
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(tmp_path / "t.db"), "--time-s", "60",
               "--budget", "minutes=0.3", "--quiet"])
    assert rc == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed" and not m["latency"]
    assert "did not finish before the budget's minutes ran out" in m["latency_cut"]
    assert not (out / ".refs").exists() and not (out / ".build").exists()
