"""The second ring (issue 21), remote results: the folder a remote host sends back is input, judged here
against what this side kept at `batch` (leka/remote/judge.py). One honest round is made once (batch here, a
separate process standing in for the GPU host); each case edits a copy of it as a hostile host would and
checks what `ingest` stores: nothing unverified is correct, nothing this side did not ask for is stored, bad
files are one-line errors (exit 2). Cases as in tests/adversarial (README, "Second ring")."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from leka.cli.main import main
from leka.compiler import default_schedule
from leka.errors import LekaError
from leka.remote import rounds
from leka.remote.pending import PendingStore, measurement_key
from leka.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
TASK = "l1-relu6-7x7x960-f16"


@pytest.fixture(scope="module")
def honest_round(tmp_path_factory):
    """(pending store file, round folder, candidate key): one candidate (the naive lowering) and its
    baseline batched here and run by the stand-in host."""
    d = tmp_path_factory.mktemp("remote")
    store = PendingStore(d / "pending.sqlite")
    source = default_schedule(get_task(TASK).build(), "host-cpu", "naive").script()
    key = measurement_key(TASK, "host-cpu", "tvm-naive", source)
    store.ask(key, "run-1", TASK, "host-cpu", "tvm-naive", source)
    jobs = rounds.batch(store, d / "jobs", number=2, rounds=3)
    store.close()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "leka.remote.multi", "--jobs", "1", *map(str, jobs)], env=env,
                   check=True, timeout=600, capture_output=True)
    return d / "pending.sqlite", jobs[0].parent, key


@pytest.fixture()
def copy(honest_round, tmp_path):
    """A fresh copy of the honest round (store and folders) to edit: (store, job folder, key)."""
    db, round_dir, key = honest_round
    shutil.copy(db, tmp_path / "pending.sqlite")
    shutil.copytree(round_dir, tmp_path / round_dir.name)
    job = next((tmp_path / round_dir.name).iterdir())
    return PendingStore(tmp_path / "pending.sqlite"), job, key


def _edit_result(job: Path, name: str, **fields) -> None:
    res = json.loads((job / "result.json").read_text())
    res["modules"][name].update(fields)
    (job / "result.json").write_text(json.dumps(res))


def test_honest_round_is_correct_and_timed(copy):
    """honest sibling: the stand-in's outputs re-checked here, its rounds timed: correct, with a speedup."""
    store, job, key = copy
    t0 = time.perf_counter()
    assert rounds.ingest(store, job.parent)["new"] == 1
    print(f"ingest: {(time.perf_counter() - t0) * 1e3:.1f} ms for 1 job of 2 modules")
    r = store.result(key)
    assert r["correct"] and r["speedup"] > 0 and r["candidate_ms"] > 0, r


def test_missing_outputs_are_not_verified(copy):
    """attack: the host says correct and sends no outputs; expect: not correct (before: the re-check skipped)."""
    store, job, key = copy
    for f in job.glob(f"out_c-{key}_*.npz"):
        f.unlink()
    rounds.ingest(store, job.parent)
    r = store.result(key)
    assert not r["correct"] and "not verified" in r["error"], r


def test_zero_outputs_against_edited_references_are_not_correct(copy):
    """attack: all-zero outputs, the folder's references zeroed and its tolerance widened to match; expect:
    not correct (before: stored as correct, judged by the folder's own references and tolerance)."""
    store, job, key = copy
    jd = json.loads((job / "job.json").read_text())
    jd.update(rtol=1e9, atol_scale=1e9)
    (job / "job.json").write_text(json.dumps(jd))
    for k, trial in enumerate(jd["trials"]):
        data = dict(np.load(job / trial["file"]))
        zeros = {n: np.zeros_like(a) for n, a in data.items() if n.startswith("out_")}
        np.savez(job / trial["file"], **{**data, **zeros})
        np.savez(job / f"out_c-{key}_{k}.npz", *zeros.values())
    rounds.ingest(store, job.parent)
    r = store.result(key)
    assert not r["correct"] and "not the one this side wrote" in r["error"], r


@pytest.mark.parametrize("rounds_s, why", [
    ([1.5e-9] * 3, "below the task's floor"),  # before: "done, speedup 794.77x"
    ([0.0] * 3, "finite positive"),  # before: ZeroDivisionError
    ([-1e-5] * 3, "finite positive"),  # before: stored as speedup -1.3
    ([1e-5] * 2, "rounds, 3 asked"),
], ids=["1.5ns", "zero", "negative", "rounds-missing"])
def test_implausible_remote_timing_is_not_believed(copy, rounds_s, why):
    """attack: the host reports impossible round times; expect: not correct, no speedup, no crash."""
    store, job, key = copy
    _edit_result(job, f"c-{key}", rounds_s=rounds_s, median_ms=rounds_s[0] * 1e3)
    rounds.ingest(store, job.parent)
    r = store.result(key)
    assert not r["correct"] and r.get("speedup") is None and why in r["error"], r


def test_more_runs_than_asked_are_not_believed(copy):
    """attack: rounds claiming more runs than this side asked (the lie-runs shape); expect: not correct."""
    store, job, key = copy
    _edit_result(job, f"c-{key}", number=10_000)
    rounds.ingest(store, job.parent)
    assert "at most 2 asked" in store.result(key)["error"]


def test_modules_not_asked_for_are_not_stored(copy):
    """attack: extra modules in result.json, one a `../` name, one a key this side never asked; expect: none
    stored, counted as not asked."""
    store, job, key = copy
    res = json.loads((job / "result.json").read_text())
    good = res["modules"][f"c-{key}"]
    res["modules"].update({"c-../../evil": good, "c-0123456789abcdef01234567": good})
    (job / "result.json").write_text(json.dumps(res))
    counts = rounds.ingest(store, job.parent)
    assert counts["new"] == 1 and counts["not_asked"] == 2, counts
    assert store.result("../../evil") is None and store.result("0123456789abcdef01234567") is None


@pytest.mark.parametrize("file, text", [("result.json", "{not json"), ("result.json", '{"modules": [1]}'),
                                        ("job.json", "[]"), ("job.json", "\udcff")],
                         ids=["result-syntax", "result-shape", "job-list", "job-bytes"])
def test_malformed_files_are_one_line_errors(copy, capsys, file, text):
    """attack: a malformed result.json or job.json; expect: `leka remote ingest` exits 2 in one line naming
    the file, nothing stored (before: internal error, exit 1)."""
    store, job, key = copy
    (job / file).write_bytes(text.encode("utf-8", "surrogateescape"))
    assert main(["remote", "--store", str(store.path), "ingest", str(job.parent), "--no-resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and file in err and "Traceback" not in err, err
    assert store.result(key) is None
    with pytest.raises(LekaError):
        rounds.ingest(store, job.parent)
