"""leka.remote.multi: a job folder with several modules of one task, run by a separate process with the
runtime path (host-cpu stand-in for the GPU host): verdicts per module, a wrong module recorded as wrong,
a faulting one as crash (the batch goes on), the correct ones timed alternately."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tvm.script import tirx as T

from leka.compiler import build, default_schedule
from leka.errors import LekaError
from leka.remote.job import make_multi_job
from leka.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
TASK = "l1-relu6-56x56x144-f16"




def test_multi_job_verdicts_and_timing(tmp_path):
    task = get_task(TASK)
    naive = default_schedule(task.build(), "host-cpu", "naive")
    mods = [("tvm-naive", build(naive, "host-cpu"), {"method": "tvm-naive"}),
            ("again", build(naive, "host-cpu"), {"method": "leka-offline"})]
    job = make_multi_job(task, mods, "host-cpu", tmp_path / "job", trials=2, number=2, rounds=3)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "leka.remote.multi", "--jobs", "1", str(job)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((job / "result.json").read_text())
    for name in ("tvm-naive", "again"):
        m = res["modules"][name]
        assert m["verdict"] == "correct" and [t["dist"] for t in m["trials"]] == ["normal", "heavy"]
        assert len(m["rounds_s"]) == 3 and m["median_ms"] > 0
    assert (job / "out_again_1.npz").exists()  # outputs come back for checking on the build host
    said = json.loads(proc.stdout.strip().splitlines()[-1])["round"]  # the round's wall time, by phase
    assert said["jobs"] == 1 and said["modules"] == 2 and said["wall_s"] >= said["check_s"] + said["time_s"] - 0.2


def test_each_module_is_checked_on_two_trials_of_different_inputs(tmp_path):
    task = get_task(TASK)
    naive = build(default_schedule(task.build(), "host-cpu", "naive"), "host-cpu")
    with pytest.raises(LekaError, match="at least 2 trials"):
        make_multi_job(task, [("a", naive, {})], "host-cpu", tmp_path / "one", trials=1)
    job = make_multi_job(task, [("a", naive, {})], "host-cpu", tmp_path / "job", seed=5)
    trials = json.loads((job / "job.json").read_text())["trials"]
    assert len(trials) == 2 and trials[0]["dist"] != trials[1]["dist"] and trials[0]["seed"] != trials[1]["seed"]
    x0, x1 = (np.load(job / t["file"])["in_0"] for t in trials)
    assert not np.array_equal(x0, x1)


# Host-cpu stand-ins for a kernel that faults on the GPU: a store 2**40 rows out of bounds kills the process
# (SIGSEGV; a CUDA illegal address loses the context instead), and a kernel that raises the CUDA driver's
# fatal error text (what the runtime raises after an illegal address) must end its process's work too.
@T.prim_func
def _segfault(X: T.Buffer((1, 56, 56, 144), "float16"), Y: T.Buffer((1, 56, 56, 144), "float16")):
    T.func_attr({"global_symbol": "main"})
    Y[0, T.int64(1) << T.int64(40), 0, 0] = X[0, 0, 0, 0]


@T.prim_func
def _fatal(X: T.Buffer((1, 56, 56, 144), "float16"), Y: T.Buffer((1, 56, 56, 144), "float16")):
    T.func_attr({"global_symbol": "main"})
    assert X[0, 0, 0, 0] != X[0, 0, 0, 0], "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
    Y[0, 0, 0, 0] = X[0, 0, 0, 0]


def test_faulting_kernels_are_crashes_and_the_batch_goes_on(tmp_path):
    task = get_task(TASK)
    naive = build(default_schedule(task.build(), "host-cpu", "naive"), "host-cpu")
    mods = [("segv", build(_segfault, "host-cpu"), {}), ("good", naive, {}), ("fatal", build(_fatal, "host-cpu"), {}),
            ("after", naive, {})]
    first = make_multi_job(task, mods, "host-cpu", tmp_path / "first", number=1, rounds=2)
    second = make_multi_job(task, [("b", naive, {})], "host-cpu", tmp_path / "second", number=1, rounds=2)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "leka.remote.multi", "--jobs", "1", str(first), str(second)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((first / "result.json").read_text())["modules"]
    assert res["segv"]["verdict"] == "crash" and "process died" in res["segv"]["error"]
    assert res["fatal"]["verdict"] == "crash" and "ILLEGAL_ADDRESS" in res["fatal"]["error"]
    for name in ("segv", "fatal"):
        assert "rounds_s" not in res[name]
    for name in ("good", "after"):  # checked by the fresh process after each crash, then timed
        assert res[name]["verdict"] == "correct" and len(res[name]["trials"]) == 2 and res[name]["median_ms"] > 0
    assert json.loads((second / "result.json").read_text())["modules"]["b"]["verdict"] == "correct"
