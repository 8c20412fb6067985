"""The remote tuning loop end to end, with a separate process standing in for the remote host (it runs the
job folders with leka.remote.multi, the runtime path only) and host-cpu forced into remote mode: runs
pause on pending measurements, one batch per round executes, the runs resume from their checkpoints, the
trace shows each round's step, and a driver killed mid-resume leaves nothing measured twice."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leka.agent.session import TuneOptions
from leka.agent.state import Policy
from leka.agent.trace import TraceStore
from leka.remote import loop, rounds
from leka.remote.pending import PendingStore

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["l1-relu6-7x7x960-f16", "l1-gemv-1024x1024-f16"]


def _remote_host(jobs: list[Path]) -> None:
    """The stand-in: another process, PYTHONPATH = the project only, running the folders."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "leka.remote.multi", "--jobs", "2", *map(str, jobs)], env=env,
                   check=True, timeout=600, capture_output=True)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.slow
def test_runs_pause_batch_resume(home):
    store = PendingStore(home / "pending.sqlite")
    policy = Policy(k=2, max_steps=2, layers=("schedule",))
    ids = loop.start(store, [TuneOptions(task_id=t, target="host-cpu", policy=policy) for t in TASKS])
    assert {r["status"] for r in store.runs()} == {"pending"}
    n_rounds = 0
    while store.open_requests():
        jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
        assert len(jobs) <= len(TASKS)  # one job folder per task per round, whatever the candidates
        _remote_host(jobs)
        n_rounds += 1
        assert rounds.ingest(store, jobs[0].parent)["new"] > 0
        loop.resume_all(store)
        assert n_rounds < 10
    assert {r["status"] for r in store.runs()} == {"done"}
    trace = TraceStore()
    for rid in ids:
        steps = trace.steps(rid)
        assert len(steps) == 2  # one step per round, each measured on the stand-in host
        assert all(c.get("speedup") or c.get("failure") for s in steps for c in s["candidates"] if c.get("valid"))
        assert any(c.get("speedup") for s in steps for c in s["candidates"])
    assert n_rounds >= 3  # step 1, step 2, finalize's fresh re-measure: one round each
    # every measurement was asked and answered once: a result per key, none asked after its answer
    keys = store._db.execute("SELECT key, round FROM pending").fetchall()
    assert all(r is not None for _, r in keys)


@pytest.mark.slow
def test_killed_driver_resumes_without_remeasuring(home):
    store = PendingStore(home / "pending.sqlite")
    policy = Policy(k=2, max_steps=2, layers=("schedule",))
    loop.start(store, [TuneOptions(task_id=TASKS[0], target="host-cpu", policy=policy)])
    jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
    _remote_host(jobs)
    rounds.ingest(store, jobs[0].parent)
    answered = {k for k, in store._db.execute("SELECT key FROM results")}
    # a driver that resumes the runs, killed while it works
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "leka.cli.main", "remote", "--store", str(home / "pending.sqlite"),
                             "ingest", str(jobs[0].parent)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    loop.resume_all(store)  # a new driver
    asked_again = {r["key"] for r in store.open_requests()} & answered
    assert not asked_again
    assert rounds.ingest(store, jobs[0].parent)["new"] == 0  # the same batch again: nothing new
