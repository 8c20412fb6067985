"""`leka bench run --executor ray`: the same samples and correctness as the local executor, the store complete;
a driver killed mid-run resumes with no sample repeated; a bad Ray address is a one-line error. One Ray
instance (started here, 2 CPUs, one `leka_timing` unit) serves the module; drivers are subprocesses that join
it with --ray-address, as drivers of a real cluster would."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]
TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")
SLICE = ["--method", "tvm-naive", "--tasks", TASKS, "--pattern", "benchtest", "--trials", "2"]


@pytest.fixture(scope="module")
def ray_address():
    from leka.executors.ray_executor import TIMING_RESOURCE

    ray.init(num_cpus=2, resources={TIMING_RESOURCE: 1}, include_dashboard=False, log_to_driver=False,
             object_store_memory=256 << 20, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _leka(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def _rows(db: Path, run_id: str | None = None) -> list[dict]:
    with sqlite3.connect(db) as c:
        q = "SELECT run_id, task, method, sample_idx, correct, failure, record_json FROM samples"
        rows = c.execute(q + (" WHERE run_id = ?" if run_id else ""), (run_id,) if run_id else ()).fetchall()
    return [{"run": r[0], "key": (r[1], r[2], r[3]), "correct": r[4], "failure": r[5],
             "where": json.loads(r[6]).get("where")} for r in rows]


def test_ray_matches_local(ray_address, tmp_path):
    local, remote = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    r = _leka("bench", "run", *SLICE, "--no-measure", "--quiet", "--store", str(local))
    assert r.returncode == 0, r.stderr
    r = _leka("bench", "run", *SLICE, "--no-measure", "--quiet", "--store", str(remote),
              "--executor", "ray", "--ray-address", ray_address)
    assert r.returncode == 0, r.stderr
    assert "[ray]" in r.stderr  # where the samples ran
    a = sorted((x["key"], x["correct"], x["failure"]) for x in _rows(local))
    b = sorted((x["key"], x["correct"], x["failure"]) for x in _rows(remote))
    assert a == b and len(a) == 2 and all(c == 1 for _, c, _ in a)
    node = ray.get_runtime_context().get_node_id()
    assert {x["where"]["executor"] for x in _rows(remote)} == {"ray"}
    assert {x["where"]["node"] for x in _rows(remote)} == {node}
    assert {x["where"]["executor"] for x in _rows(local)} == {"local"}


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no tables yet
        return 0


@pytest.mark.slow
def test_killed_ray_driver_resumes_without_repeats(ray_address, tmp_path):
    db, samples = tmp_path / "r.sqlite", 3
    p = subprocess.Popen([sys.executable, "-m", "leka.cli.main", "bench", "run", *SLICE, "--samples", str(samples),
                          "--quiet", "--store", str(db), "--executor", "ray", "--ray-address", ray_address],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 180
    while _count(db) < 1 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, f"run ended before it could be killed: {p.stderr.read()[-2000:]}"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    killed_at = _count(db)
    assert 1 <= killed_at < 2 * samples
    with sqlite3.connect(db) as c:
        (run_id,) = c.execute("SELECT run_id FROM runs").fetchone()
    r = _leka("bench", "run", "--resume", run_id, "--quiet", "--store", str(db), "--executor", "ray",
              "--ray-address", ray_address)
    assert r.returncode == 0, r.stderr
    assert f"({killed_at} already done)" in r.stderr
    keys = [x["key"] for x in _rows(db, run_id)]
    assert len(keys) == len(set(keys)) == 2 * samples
    with sqlite3.connect(db) as c:
        events = [e for (e,) in c.execute("SELECT event FROM run_events WHERE run_id = ? ORDER BY id", (run_id,))]
    assert events == ["started", "resumed", "finished"]


def test_unreachable_ray_address_is_one_line(tmp_path):
    r = _leka("bench", "run", *SLICE, "--quiet", "--store", str(tmp_path / "x.sqlite"), "--executor", "ray",
              "--ray-address", "127.0.0.1:9", timeout=60)
    assert r.returncode == 2
    assert "no Ray cluster answers there" in r.stderr and "Traceback" not in r.stderr
    with sqlite3.connect(tmp_path / "x.sqlite") as c:  # the run is not left "started"
        assert c.execute("SELECT event FROM run_events ORDER BY id DESC").fetchone() == ("failed",)


def test_budget_is_refused_with_ray(tmp_path):
    r = _leka("bench", "run", *SLICE, "--quiet", "--store", str(tmp_path / "x.sqlite"), "--executor", "ray",
              "--ray-address", "127.0.0.1:9", "--budget", "compiles=5", timeout=60)
    assert r.returncode == 2 and "--budget" in r.stderr and "Traceback" not in r.stderr
