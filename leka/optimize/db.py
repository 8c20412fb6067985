"""The tuning database: verified winners keyed by (structural hash of the kernel, target).

A re-run, or another model that shares layers, reuses an entry at no budget cost: the db is a cache, not an
oracle, so the entry is re-verified by the evaluator before use and, on a target measurable here, re-measured
against the default kernel and reused only if it still wins (leka.optimize.pipeline._reverify). Each entry
records who and what measured it (detail.measured_by). A kernel whose tuning kept the default build is recorded too (source NULL), so it
is not tuned again either. Optimisation runs are recorded so `--resume` finds the interrupted one.
SQLite, one file (`--db PATH`, default .leka/tuning.db or $LEKA_HOME/tuning.db).
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leka.storage import leka_home, open_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS winners (
  kernel_key TEXT NOT NULL, target_key TEXT NOT NULL, task_id TEXT NOT NULL, source TEXT,
  speedup REAL, candidate_ms REAL, baseline_ms REAL, method TEXT NOT NULL, run_id TEXT NOT NULL,
  agent_run TEXT, detail_json TEXT NOT NULL DEFAULT '{}', created_at REAL NOT NULL,
  PRIMARY KEY (kernel_key, target_key));
CREATE TABLE IF NOT EXISTS optimize_runs (
  run_id TEXT PRIMARY KEY, model_sha TEXT NOT NULL, target_key TEXT NOT NULL, method TEXT NOT NULL,
  status TEXT NOT NULL, created_at REAL NOT NULL, detail_json TEXT NOT NULL DEFAULT '{}');
"""


@dataclass
class Winner:
    kernel_key: str
    task_id: str
    source: str | None  # None: tuned, and the default build stayed the best
    speedup: float | None
    candidate_ms: float | None
    baseline_ms: float | None
    method: str
    run_id: str
    agent_run: str | None
    detail: dict[str, Any]


def default_db_path() -> Path:
    return leka_home() / "tuning.db"


def target_key(preset: Any) -> str:
    """A target is identified by its full TVM target dict (mcpu, arch ...), not only its preset name."""
    return json.dumps(preset.target, sort_keys=True)


def measured_by(w: Winner) -> dict[str, Any]:
    """Who and what measured an entry: this host and LEKA version (which judged it), the method and its run,
    and the device when a remote host ran the timing (its result re-checked here, leka.remote.judge)."""
    import platform

    from leka import __version__

    remote = w.detail.get("remote")
    if not isinstance(remote, dict):
        remote = {}
    return {"host": platform.node(), "machine": platform.machine(), "leka": __version__, "method": w.method,
            "run": w.run_id, "device": remote.get("device") or "this host",
            "how": "re-measured at reuse" if "remeasured" in w.detail else "measured when tuned",
            "at": time.time()}


class TuningDB:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_db_path()
        self._db = open_db(self.path, SCHEMA, what="tuning database", rows=True)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "TuningDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def get(self, kernel_key: str, tkey: str) -> Winner | None:
        row = self._db.execute("SELECT * FROM winners WHERE kernel_key = ? AND target_key = ?",
                               (kernel_key, tkey)).fetchone()
        if row is None:
            return None
        return Winner(row["kernel_key"], row["task_id"], row["source"], row["speedup"], row["candidate_ms"],
                      row["baseline_ms"], row["method"], row["run_id"], row["agent_run"],
                      json.loads(row["detail_json"]))

    def put(self, w: Winner, tkey: str, refresh: bool = False) -> None:
        """Keep the faster of an existing entry and `w` (a tuned kernel never gets slower by a re-run); refresh:
        `w` is the existing entry re-measured now, and replaces it whatever it recorded. Each entry says who and
        what measured it (measured_by)."""
        old = self.get(w.kernel_key, tkey)
        if (not refresh and old is not None and old.source is not None
                and (w.source is None or (old.speedup or 0) >= (w.speedup or 0))):
            return
        w.detail["measured_by"] = measured_by(w)
        self._db.execute("INSERT OR REPLACE INTO winners VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         (w.kernel_key, tkey, w.task_id, w.source, w.speedup, w.candidate_ms, w.baseline_ms,
                          w.method, w.run_id, w.agent_run, json.dumps(w.detail, default=str), time.time()))

    def delete(self, kernel_key: str, tkey: str) -> None:
        self._db.execute("DELETE FROM winners WHERE kernel_key = ? AND target_key = ?", (kernel_key, tkey))

    # -- optimisation runs (for --resume) ---------------------------------------------------------
    def start_run(self, model_sha: str, tkey: str, method: str, resume: bool | str) -> tuple[str, bool]:
        """(run id, resumed?): with resume, the latest unfinished run of this model/target/method (resume a
        run id or a unique prefix of one: that run, which must be an unfinished one of them)."""
        if isinstance(resume, str):
            rows = self._db.execute("SELECT run_id FROM optimize_runs WHERE run_id LIKE ? AND model_sha = ? AND "
                                    "target_key = ? AND method = ? AND status != 'done'",
                                    (resume.replace("%", "") + "%", model_sha, tkey, method)).fetchall()
            if len(rows) != 1:
                from leka.errors import LekaError

                raise LekaError(f"--resume {resume}: {'no' if not rows else 'more than one'} unfinished optimize "
                                f"run of this model, target and method ({method}) has that id")
            return rows[0]["run_id"], True
        if resume:
            row = self._db.execute("SELECT run_id FROM optimize_runs WHERE model_sha = ? AND target_key = ? AND "
                                   "method = ? AND status != 'done' ORDER BY created_at DESC LIMIT 1",
                                   (model_sha, tkey, method)).fetchone()
            if row is not None:
                return row["run_id"], True
        run_id = f"opt-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self._db.execute("INSERT INTO optimize_runs VALUES (?,?,?,?,?,?,?)",
                         (run_id, model_sha, tkey, method, "running", time.time(), "{}"))
        return run_id, False

    def finish_run(self, run_id: str, status: str, detail: dict[str, Any] | None = None) -> None:
        self._db.execute("UPDATE optimize_runs SET status = ?, detail_json = ? WHERE run_id = ?",
                         (status, json.dumps(detail or {}, default=str), run_id))
