"""`leka targets` and `leka eval` as a user runs them: JSON shapes, one-line errors, exit codes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).parent / "corpus"
EDGE = {"rpi4", "rpi5", "jetson-nano", "jetson-orin-nano", "jetson-agx-orin", "mali-g610", "adreno-740"}


def leka(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_targets_json_lists_presets():
    r = leka("targets", "--json")
    assert r.returncode == 0, r.stderr
    presets = {p["name"]: p for p in json.loads(r.stdout)}
    assert presets["host-cpu"]["runnable"] and presets["opencl-pocl"]["runnable"]
    assert "cuda" in presets and presets["cuda"]["target"]["kind"] == "cuda"
    assert EDGE <= set(presets) and not any(presets[n]["runnable"] for n in EDGE)
    for p in presets.values():
        assert {"name", "runnable", "target", "facts"} <= set(p)
        assert p["target"]["kind"] in ("llvm", "cuda", "opencl")
    assert presets["rpi5"]["facts"]["peak_fp32_gflops"] > 0


def _one_line_error(r: subprocess.CompletedProcess, code: int, needle: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("leka: error:"), r.stderr
    assert needle in lines[0] and "Traceback" not in r.stderr


def test_unknown_target_lists_known_ones():
    _one_line_error(leka("eval", str(CORPUS / "correct_naive.py"), "--target", "tpu9000"), 2, "known presets: host-cpu")


def test_unknown_task(tmp_path):
    f = tmp_path / "c.py"
    f.write_text((CORPUS / "correct_naive.py").read_text().replace("task=ex-softmax-512x384", "task=no-such-task"))
    _one_line_error(leka("eval", str(f)), 2, "unknown task 'no-such-task'")


def test_not_tvmscript(tmp_path):
    f = tmp_path / "notes.py"
    f.write_text("# leka: task=ex-softmax-512x384\nthis is not python\n")
    _one_line_error(leka("eval", str(f)), 2, "is not TVMScript")
    g = tmp_path / "plain.py"
    g.write_text("# leka: task=ex-softmax-512x384\nx = 1\n")
    _one_line_error(leka("eval", str(g)), 2, "no @T.prim_func")


def test_signature_mismatch(tmp_path):
    f = tmp_path / "sig.py"
    f.write_text((CORPUS / "correct_naive.py").read_text().replace('Y: T.Buffer((512, 384), "float32")',
                                                                  'Y: T.Buffer((512, 384), "float16")'))
    _one_line_error(leka("eval", str(f), "--no-measure"), 2, "parameter 1 'Y' is float16[512, 384]")


def test_wrong_candidate_reports_mismatches_as_json():
    r = leka("eval", str(CORPUS / "hack_partial_write.py"), "--json", "--no-measure")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert d["failure"] == "wrong" and d["correct"] is False and d["compiled"] is True
    assert d["mismatches"][0]["index"][0] == 511
    assert {"speedup", "baseline", "candidate_ms", "baseline_ms", "spread", "error"} <= set(d)
