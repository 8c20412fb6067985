"""The second ring (issue 21), artifacts: `leka run` reads an artifact folder and the user's .npz files as
input. The manifest records the sha256 of model.so and of the check files, verified before anything is
loaded; .npz files are read with their sizes checked from the headers. One small artifact is built once; each
case edits a copy as an attacker would. Cases as in tests/adversarial (README, "Second ring")."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main

from one_line import one_line_error


def _tiny_model(path: Path) -> Path:
    """x(1,64) -> MatMul 64x32 -> Relu -> y: one small kernel, fast to build."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], initializer=[w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    d = tmp_path_factory.mktemp("art")
    rc = main(["optimize", str(_tiny_model(d / "tiny.onnx")), "-o", str(d / "a.leka"), "--db", str(d / "t.db"),
               "--method", "tvm-naive", "--budget", "compiles=2", "--time-s", "0", "--quiet"])
    assert rc == 0
    return d / "a.leka"


@pytest.fixture()
def art(artifact, tmp_path):
    shutil.copytree(artifact, tmp_path / "a.leka")
    return tmp_path / "a.leka"




def test_honest_artifact_runs_and_checks(art, capsys):
    """honest sibling: digests match, --check passes; the digest check's cost is printed."""
    from leka.optimize.artifact import load_manifest, verify_digests

    assert main(["run", str(art), "--check"]) == 0
    assert "check passed" in capsys.readouterr().out
    t0 = time.perf_counter()
    verify_digests(art, load_manifest(art))
    print(f"digest check: {(time.perf_counter() - t0) * 1e3:.2f} ms ({(art / 'model.so').stat().st_size:,} B model.so)")


def test_swapped_library_is_refused_before_it_loads(art, capsys, tmp_path):
    """attack: model.so replaced by a library whose constructor writes a marker; expect: exit 2 naming
    model.so, the marker absent (before: loaded blind, its constructor ran)."""
    marker = tmp_path / "MARKER"
    src = tmp_path / "evil.c"
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                   f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(art / "model.so"), str(src)], check=True)
    assert main(["run", str(art), "--check"]) == 2
    one_line_error(capsys, "model.so", "refused before loading")
    assert not marker.exists()


@pytest.mark.parametrize("edit", ["check/expected.npz", "no-digests"])
def test_edited_check_files_or_manifest_are_refused(art, capsys, edit):
    """attack: a check file replaced (a check that passes anything), or the digests dropped from the manifest;
    expect: exit 2, one line."""
    if edit == "no-digests":
        m = json.loads((art / "manifest.json").read_text())
        del m["digests"]
        (art / "manifest.json").write_text(json.dumps(m))
    else:
        np.savez(art / edit, y=np.zeros((1, 32), np.float32))
    assert main(["run", str(art), "--check"]) == 2
    one_line_error(capsys, "sha256")


def test_manifest_outputs_that_disagree_with_the_library(art, capsys):
    """attack: the manifest names two outputs, the library returns one; expect: exit 2 (before: exit 1,
    internal error)."""
    m = json.loads((art / "manifest.json").read_text())
    m["outputs"].append({"name": "z", "shape": [1], "dtype": "float32"})
    (art / "manifest.json").write_text(json.dumps(m))
    assert main(["run", str(art), "--check"]) == 2
    one_line_error(capsys, "output(s)", "manifest")


@pytest.mark.parametrize("shape", [["a", 64], [1, -1], "1x64"])
def test_malformed_manifest_inputs_are_one_line(art, capsys, shape):
    """attack: an edited manifest whose input shape is not whole numbers; expect: exit 2, one line."""
    m = json.loads((art / "manifest.json").read_text())
    m["inputs"][0]["shape"] = shape
    (art / "manifest.json").write_text(json.dumps(m))
    assert main(["run", str(art), "--check"]) == 2
    one_line_error(capsys, "malformed input")


def _bomb(path: Path, shape: tuple[int, ...]) -> Path:
    """An .npz whose header declares `shape` of float32, with only a few bytes of data behind it."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("x.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.write(bytes(4096))
    return path


@pytest.mark.parametrize("kind", ["truncated", "pickled", "declared-1x65536x65536", "wrong-shape"])
@pytest.mark.parametrize("timed", [False, True], ids=["run", "time"])
def test_hostile_inputs_are_one_line_errors(art, capsys, tmp_path, kind, timed):
    """attack: a truncated, pickled, or huge-declaring .npz as --inputs; expect: exit 2 in one line, without
    decompressing what the header declares (before: exit 1, internal error; the 16 GiB array decompressed)."""
    p = tmp_path / "in.npz"
    if kind == "truncated":
        np.savez(p, x=np.ones((1, 64), np.float32))
        p.write_bytes(p.read_bytes()[:200])
    elif kind == "pickled":
        np.savez(p, x=np.array([{"a": 1}], dtype=object))
    elif kind == "wrong-shape":
        np.savez(p, x=np.ones((2, 64), np.float32))
    else:
        _bomb(p, (1, 65536, 65536))
    t0 = time.perf_counter()
    assert main(["run", str(art), "--inputs", str(p), *(["--time-runs", "3"] if timed else [])]) == 2
    assert time.perf_counter() - t0 < 30
    one_line_error(capsys, str(p))


# -- the tuning db ----------------------------------------------------------------------------------------------
def test_db_entry_is_remeasured_before_reuse(tmp_path):
    """attack: a db entry recording 1e9x for a kernel no faster than the default (its own naive lowering);
    expect: re-measured at reuse, not built in, the entry gone or replaced by a measured one (before: reused
    without measurement, and never replaced since a re-run keeps the faster recorded speedup)."""
    from leka.optimize.db import TuningDB, Winner, target_key
    from leka.optimize.extract import kernel_specs, make_task
    from leka.optimize.importer import import_model
    from leka.targets import get_target

    model, db = _tiny_model(tmp_path / "tiny.onnx"), tmp_path / "t.db"
    spec = next(iter(kernel_specs(import_model(model)[1])))
    src = make_task(spec, "host-cpu").build().script()
    tkey = target_key(get_target("host-cpu"))
    with TuningDB(db) as tdb:
        tdb.put(Winner(spec.key, spec.task_id, src, 1e9, 1e-9, 1.0, "forged", "seed", None, {}), tkey)
    assert main(["optimize", str(model), "-o", str(tmp_path / "a.leka"), "--db", str(db), "--method", "tvm-naive",
                 "--budget", "compiles=2", "--time-s", "0", "--quiet"]) == 0
    kernel = next(k for k in json.loads((tmp_path / "a.leka" / "manifest.json").read_text())["kernels"]
                  if k["key"] == spec.key)
    assert kernel["method"] != "forged" and not kernel["decision"].startswith("reused"), kernel
    with TuningDB(db) as tdb:
        entry = tdb.get(spec.key, tkey)
    assert entry is None or (entry.method != "forged" and entry.detail["measured_by"]["host"]), entry


def test_a_build_slower_than_the_default_does_not_ship():
    """attack: kernels that passed one by one make a model 100x slower than its default build; expect: that
    build withheld, the default build written instead (before: written with exit 0; then: nothing written).
    Equal timings within noise ship the winners."""
    from leka.optimize.pipeline import slower_than_default
    from leka.targets import get_target

    def side(ms: float) -> dict:
        return {"median_ms": ms, "min_ms": ms, "rounds": 9, "iqr_rel": 0.02}

    cpu = get_target("host-cpu")
    why = slower_than_default({"optimized": side(100.0), "tvm-naive": side(1.0)}, cpu)
    assert why and "slower than the default build (tvm-naive)" in why and "100 ms vs 1 ms" in why
    assert slower_than_default({"optimized": side(1.01), "tvm-naive": side(1.0)}, cpu) is None
    assert slower_than_default(None, cpu) is None  # not timed (--time 0)
