"""Targets as users write them: a TVM target dict for this very CPU is tuned and timed like host-cpu (the triple's
vendor part may differ); one this host cannot run builds only and says why."""
from __future__ import annotations

import json

from leka.cli.main import main
from leka.targets import get_target


def _host() -> dict:
    return get_target("host-cpu").target


def test_a_dict_for_this_cpu_is_runnable_whatever_the_triple_vendor():
    h = _host()
    arch = h["mtriple"].split("-")[0]
    for triple in (h["mtriple"], f"{arch}-pc-linux-gnu", f"{arch}-unknown-linux-gnu", None):
        d = {"kind": "llvm", "mcpu": h["mcpu"], **({"mtriple": triple} if triple else {})}
        t = get_target(json.dumps(d))
        assert t.runnable and t.runner == "llvm" and t.facts.get("cores") == h["num-cores"], (triple, t)
    assert get_target({"kind": "llvm", "mcpu": "generic"}).runnable


def test_a_dict_this_host_cannot_run_builds_only_and_says_why():
    other_arch = "aarch64" if _host()["mtriple"].startswith("x86_64") else "x86_64"
    t = get_target({"kind": "llvm", "mtriple": f"{other_arch}-linux-gnu"})
    assert not t.runnable and "mtriple" in t.why_not_runnable
    other_cpu = "cortex-a76" if other_arch == "aarch64" else "skylake"
    t = get_target({"kind": "llvm", "mtriple": _host()["mtriple"], "mcpu": other_cpu})
    if other_cpu != _host()["mcpu"]:
        assert not t.runnable and f"mcpu {other_cpu} is not this host's" in t.why_not_runnable


def test_optimize_tunes_and_times_with_a_host_target_dict(tmp_path, capsys):
    from test_optimize_e2e import gemv_model

    h = _host()
    target = json.dumps({"kind": "llvm", "mtriple": h["mtriple"].split("-")[0] + "-pc-linux-gnu", "mcpu": h["mcpu"]})
    model, out = gemv_model(tmp_path / "gemv.onnx"), tmp_path / "new" / "dir" / "g.leka"
    rc = main(["optimize", str(model), "--target", target, "-o", str(out), "--db", str(tmp_path / "t.db"),
               "--method", "tvm-dlight", "--budget", "compiles=8,measurements=8", "--time-s", "0.1", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    m = json.loads((out / "manifest.json").read_text())
    assert m["target"]["runnable_here"] and m["tuning_note"] is None
    assert all(not k["decision"].startswith("not tuned") for k in m["kernels"] if k["share"] >= 0.02), m["kernels"]
    assert m["budget"]["spent"].get("compiles", 0) >= 1
    assert {"optimized", "tvm-naive", "onnxruntime"} <= set(m["latency"]) and m["latency_host"]["cores"] >= 1
    assert m["verification"]["status"] == "passed"


def test_out_parents_are_made_only_when_writing_and_a_file_in_the_way_is_refused(tmp_path):
    import pytest

    from leka.optimize import OptimizeError
    from leka.optimize.artifact import check_out, staging

    out = check_out(tmp_path / "a" / "b" / "m.leka")
    assert not (tmp_path / "a").exists()  # nothing made before the run writes OUT
    with staging(out) as tmp:
        (tmp / "x").write_text("1")
    assert (out / "x").read_text() == "1"
    (tmp_path / "f").write_text("not a folder")
    with pytest.raises(OptimizeError, match="is a file, not a folder"):
        check_out(tmp_path / "f" / "sub" / "m.leka")


def test_build_only_cpu_dict_takes_its_own_facts_not_the_hosts():
    """A cascadelake dict on another host sizes vectors and threads by its own CPU (the rules' golden
    decisions for it depended on the building machine's cores before)."""
    from leka.targets import get_target

    p = get_target({"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "cascadelake", "num-cores": 4})
    if p.runnable:  # this host is a cascadelake: the dict runs here with the host's facts
        return
    assert p.facts == {"cores": 4, "vector_bits": 512}
    q = get_target({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a76"})
    assert q.facts == {} and not q.runnable
