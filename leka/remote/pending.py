"""Measurements owed by a remote host: a LEKA run that needs one records it here and pauses.

A pending record is keyed by what is measured (task, target, baseline, candidate source, and a salt that
tells search measurements from finalize's fresh re-measures): the same candidate asked twice is measured
once. `batch` turns every pending record into job folders (one per task x target x baseline: the baseline
and every pending candidate, built here); `ingest` reads their result.json back into `results`, which the
paused runs read when they resume from their checkpoints. One batch = one tuning round on the remote host.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable

from leka.errors import LekaError
from leka.storage import inserted_id, leka_home, open_db

PENDING = "pending"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending(key TEXT PRIMARY KEY, run_id TEXT, task TEXT, target TEXT, baseline TEXT,
                                   source TEXT, created REAL, round INTEGER);
CREATE TABLE IF NOT EXISTS results(key TEXT PRIMARY KEY, round INTEGER, result_json TEXT);
CREATE TABLE IF NOT EXISTS rounds(round INTEGER PRIMARY KEY, job_dir TEXT, created REAL, ingested REAL);
CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, options_json TEXT, status TEXT);
CREATE TABLE IF NOT EXISTS tasks(task_id TEXT PRIMARY KEY, factory TEXT, data_json TEXT);
CREATE TABLE IF NOT EXISTS links(owner TEXT, task_id TEXT, run_id TEXT, PRIMARY KEY(owner, task_id));
CREATE TABLE IF NOT EXISTS jobs(job_id TEXT PRIMARY KEY, round INTEGER, record_json TEXT);
"""


def default_pending_path() -> Path:
    """remote/pending.sqlite in the .leka folder (or $LEKA_HOME)."""
    return leka_home() / "remote" / "pending.sqlite"


class MeasurementPending(LekaError):
    """A run needs measurements from the remote host: it pauses (its checkpoint keeps it) until ingest."""

    def __init__(self, keys: list[str]):
        super().__init__(f"{len(keys)} measurement(s) pending on the remote host")
        self.keys = keys


def measurement_key(task: str, target: str, baseline: str, source: str, salt: str = "") -> str:
    return hashlib.sha256("\0".join((task, target, baseline, salt, source)).encode()).hexdigest()[:24]


class PendingStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_db(self.path, _SCHEMA, what="pending-measurement store", threads=True)

    def close(self) -> None:
        self._db.close()

    def result(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT result_json FROM results WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def ask(self, key: str, run_id: str, task: str, target: str, baseline: str, source: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO pending VALUES (?,?,?,?,?,?,?,NULL)",
                         (key, run_id, task, target, baseline, source, time.time()))

    def open_requests(self) -> list[dict[str, Any]]:
        """Pending records without a result, oldest first (a stopped run's are dropped)."""
        rows = self._db.execute("SELECT key, run_id, task, target, baseline, source FROM pending WHERE key NOT IN "
                                "(SELECT key FROM results) AND run_id NOT IN (SELECT run_id FROM runs WHERE "
                                "status = 'stopped') ORDER BY created").fetchall()
        return [dict(zip(("key", "run_id", "task", "target", "baseline", "source"), r)) for r in rows]

    def new_round(self, job_dir: str, keys: list[str]) -> int:
        cur = self._db.execute("INSERT INTO rounds(job_dir, created) VALUES (?,?)", (job_dir, time.time()))
        rnd = inserted_id(cur)
        self._db.executemany("UPDATE pending SET round = ? WHERE key = ?", [(rnd, k) for k in keys])
        return rnd

    def put_result(self, key: str, rnd: int | None, result: dict[str, Any]) -> bool:
        """False when the key already has a result (a batch ingested twice measures nothing again)."""
        cur = self._db.execute("INSERT OR IGNORE INTO results VALUES (?,?,?)", (key, rnd, json.dumps(result)))
        return cur.rowcount == 1

    def round_of(self, key: str) -> int | None:
        row = self._db.execute("SELECT round FROM pending WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put_job(self, record: dict[str, Any], rnd: int) -> None:
        """What this side keeps of a job folder it wrote (leka.remote.judge.job_record), to judge its results."""
        self._db.execute("INSERT OR REPLACE INTO jobs VALUES (?,?,?)", (record["job_id"], rnd, json.dumps(record)))

    def job(self, job_id: Any) -> dict[str, Any] | None:
        """The record of a job this side wrote, or None (a folder it did not make)."""
        if not isinstance(job_id, str):
            return None
        row = self._db.execute("SELECT record_json FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def mark_ingested(self, rnd: int) -> None:
        self._db.execute("UPDATE rounds SET ingested = ? WHERE round = ?", (time.time(), rnd))

    def rounds(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT round, job_dir, created, ingested FROM rounds ORDER BY round").fetchall()
        return [dict(zip(("round", "job_dir", "created", "ingested"), r)) for r in rows]

    def set_run(self, run_id: str, options: dict[str, Any], status: str) -> None:
        self._db.execute("INSERT INTO runs VALUES (?,?,?) ON CONFLICT(run_id) DO UPDATE SET status=excluded.status",
                         (run_id, json.dumps(options), status))

    def put_task(self, task_id: str, factory: str, data: dict[str, Any]) -> None:
        """A task outside the registry (a model's kernel): `factory` ("leka.module:function") rebuilds it
        from `data` in whichever process batches or resumes its run."""
        if not factory.startswith("leka."):
            raise LekaError(f"task factory {factory!r} is not a leka function")
        self._db.execute("INSERT OR REPLACE INTO tasks VALUES (?,?,?)", (task_id, factory, json.dumps(data)))

    def task(self, task_id: str, tasks_paths: list[str] | None = None) -> Any:
        """The Task of a run: one put here (put_task), else the registry's (with user task folders)."""
        row = self._db.execute("SELECT factory, data_json FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        if row is not None:
            import importlib

            module, _, name = row[0].partition(":")
            return getattr(importlib.import_module(module), name)(json.loads(row[1]))
        from leka.tasks import all_tasks, get_task

        if tasks_paths:
            all_tasks(tasks_paths)
        return get_task(task_id)

    def link(self, owner: str, task_id: str, run_id: str) -> None:
        """Remember that `owner` (a `leka optimize` run) started `run_id` for `task_id`."""
        self._db.execute("INSERT OR REPLACE INTO links VALUES (?,?,?)", (owner, task_id, run_id))

    def linked(self, owner: str) -> dict[str, str]:
        """{task id: run id} of the runs `owner` started."""
        return dict(self._db.execute("SELECT task_id, run_id FROM links WHERE owner = ?", (owner,)).fetchall())

    def status(self, run_id: str) -> str | None:
        row = self._db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row[0] if row else None

    def measured(self, task: str, target: str, baseline: str) -> list[tuple[str, dict[str, Any]]]:
        """(source, result) of every answered measurement of `task` on `target` against `baseline`, whichever
        run asked first (a measurement asked twice is stored once)."""
        rows = self._db.execute("SELECT p.source, r.result_json FROM pending p JOIN results r ON p.key = r.key "
                                "WHERE p.task = ? AND p.target = ? AND p.baseline = ?",
                                (task, target, baseline)).fetchall()
        return [(src, json.loads(res)) for src, res in rows]

    def runs(self, status: str | None = None) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT run_id, options_json, status FROM runs").fetchall()
        return [{"run_id": r, "options": json.loads(o), "status": s} for r, o, s in rows if status in (None, s)]


def remote_evaluate_fn(store: PendingStore, run_id: str, task: Any, target: str, baseline: str,
                       salt: str = "") -> Callable[[str], dict[str, Any]]:
    """The agent's evaluate(source): the remote host's result when ingested, else a pending record and a
    `pending` answer (never journaled; the step raises MeasurementPending once all its proposals asked)."""
    def evaluate(source: str) -> dict[str, Any]:
        key = measurement_key(task.id, target, baseline, source, salt)
        got = store.result(key)
        if got is not None:
            return got
        store.ask(key, run_id, task.id, target, baseline, source)
        return {"compiled": False, "correct": False, "failure": PENDING, "pending_key": key,
                "error": "measurement pending on the remote host (leka remote batch / ingest)"}
    return evaluate


def raise_if_pending(results: list[dict[str, Any]]) -> None:
    keys = [r["pending_key"] for r in results if r.get("failure") == PENDING]
    if keys:
        raise MeasurementPending(keys)
