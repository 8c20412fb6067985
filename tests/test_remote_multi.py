"""leka.remote.multi: a job folder with several modules of one task, run by a separate process with the
runtime path (host-cpu stand-in for the GPU host): verdicts per module, a wrong module recorded as wrong,
a faulting one as crash (the batch goes on), the correct ones timed alternately."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from leka.compiler import build, default_schedule
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
        assert m["verdict"] == "correct" and len(m["trials"]) == 2
        assert len(m["rounds_s"]) == 3 and m["median_ms"] > 0
    assert (job / "out_again_1.npz").exists()  # outputs come back for checking on the build host


def test_crashed_module_is_recorded_and_batch_goes_on(tmp_path, monkeypatch):
    task = get_task(TASK)
    naive = build(default_schedule(task.build(), "host-cpu", "naive"), "host-cpu")
    job = make_multi_job(task, [("a", naive, {}), ("b", naive, {})], "host-cpu", tmp_path / "job", trials=1,
                         number=1, rounds=2)
    # a process that dies inside module "a" (as an illegal address kills a CUDA context): simulated by a
    # check.json that marks "a" as the module being run when its process died
    (job / "check.json").write_text(json.dumps({"a": {"verdict": "crash", "error": "process died while running it"}}))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "leka.remote.multi", str(job)], env=env, check=True, timeout=300,
                   capture_output=True)
    res = json.loads((job / "result.json").read_text())
    assert res["modules"]["a"]["verdict"] == "crash" and "rounds_s" not in res["modules"]["a"]
    assert res["modules"]["b"]["verdict"] == "correct" and res["modules"]["b"]["median_ms"] > 0
