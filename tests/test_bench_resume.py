"""Kill test: a `leka bench run` killed mid-way resumes with no duplicate and no missing sample."""
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")
SAMPLES = 3


def _leka(*args, **kw):
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True, **kw)


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def test_kill_then_resume_repeats_nothing(tmp_path):
    db = tmp_path / "r.sqlite"
    run = ["bench", "run", "--method", "tvm-naive", "--tasks", TASKS, "--pattern", "benchtest",
           "--samples", str(SAMPLES), "--trials", "1", "--no-measure", "--quiet", "--store", str(db)]
    p = subprocess.Popen([sys.executable, "-m", "leka.cli.main", *run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.time() + 120
    while _count(db) < 2 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, f"run ended before it could be killed: {p.stderr.read()[-2000:]}"
    os.killpg(p.pid, signal.SIGKILL)  # the run and its evaluator worker
    p.wait(timeout=10)
    with sqlite3.connect(db) as c:
        killed_at = c.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        (run_id,) = c.execute("SELECT run_id FROM runs").fetchone()
    assert 2 <= killed_at < 2 * SAMPLES

    r = _leka("bench", "run", "--resume", run_id, "--tasks", TASKS, "--quiet", "--store", str(db), timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"({killed_at} already done)" in r.stderr
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT task, method, sample_idx FROM samples WHERE run_id = ?", (run_id,)).fetchall()
        events = [e for (e,) in c.execute("SELECT event FROM run_events WHERE run_id = ? ORDER BY id", (run_id,))]
    assert len(rows) == len(set(rows)) == 2 * SAMPLES
    assert {(t, i) for t, _, i in rows} == {(t, i) for t in ("benchtest-add-64", "benchtest-gemv-32x64")
                                            for i in range(SAMPLES)}
    assert events == ["started", "resumed", "finished"]
    # a finished run resumed again does nothing
    r = _leka("bench", "run", "--resume", run_id[:20], "--tasks", TASKS, "--quiet", "--store", str(db),
              timeout=120)
    assert r.returncode == 0 and f"0 new samples ({2 * SAMPLES} already done)" in r.stderr
