"""Results store: SQLite, append-only, resumable.

Tables (nothing is ever updated or deleted; a run's state is its latest event):
  runs(run_id, created_at, method, target, config_json, versions_json)
  run_events(run_id, at, event, detail_json)          -- "started", "resumed", "finished", "paused", "interrupted"
  samples(one row per (run_id, task, method, sample_idx): the final answer of one attempt)
  candidates(intermediate candidates of an attempt, linked to the sample row)
  measurements(timings of a sample: side "candidate" | "baseline", stat "round" (one per timing round,
               idx = round) or a summary "median" | "min" | "iqr" (idx 0))
Every sample row carries task, pattern, workload, target, method, candidate hash, correctness detail,
median and spread of timings, baseline name, budget spent and versions (TVM, LLVM, leka), and the full
record as JSON. Each attempt is written in one transaction, so a killed run leaves whole samples only.
"""
from __future__ import annotations

import csv
import io
import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from leka.storage import StoreError, inserted_id, leka_home, open_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, created_at REAL NOT NULL, method TEXT NOT NULL, target TEXT NOT NULL,
  config_json TEXT NOT NULL, versions_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id), at REAL NOT NULL,
  event TEXT NOT NULL, detail_json TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS samples (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id), created_at REAL NOT NULL,
  task TEXT NOT NULL, pattern TEXT, workload TEXT, level INTEGER, domain TEXT, target TEXT NOT NULL,
  method TEXT NOT NULL, sample_idx INTEGER NOT NULL, candidate_hash TEXT, proposer TEXT,
  compiled INTEGER, correct INTEGER, failure TEXT, error TEXT, mismatch_count INTEGER,
  speedup REAL, candidate_ms REAL, spread REAL, baseline TEXT, baseline_ms REAL, baseline_spread REAL,
  roofline_fraction REAL, budget_json TEXT, versions_json TEXT, record_json TEXT NOT NULL,
  UNIQUE (run_id, task, method, sample_idx));
CREATE TABLE IF NOT EXISTS candidates (
  id INTEGER PRIMARY KEY AUTOINCREMENT, sample_id INTEGER NOT NULL REFERENCES samples(id), step INTEGER NOT NULL,
  candidate_hash TEXT, record_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY AUTOINCREMENT, sample_id INTEGER NOT NULL REFERENCES samples(id),
  side TEXT NOT NULL, stat TEXT NOT NULL, idx INTEGER NOT NULL, ms REAL NOT NULL);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
"""

# Columns copied from a record into `samples` (the rest lives in record_json).
SAMPLE_COLUMNS = ("task", "pattern", "workload", "level", "domain", "target", "method", "sample_idx",
                  "candidate_hash", "proposer", "compiled", "correct", "failure", "error", "mismatch_count",
                  "speedup", "candidate_ms", "spread", "baseline", "baseline_ms", "baseline_spread",
                  "roofline_fraction")
# input_seed: replays the sample's inputs (`leka eval --seed`); it lives in record_json.
# where: the executor and node a sample ran on (leka/executors).
EXPORT_COLUMNS = ("run_id",) + SAMPLE_COLUMNS + ("input_seed", "budget", "versions", "where")


def default_store_path() -> Path:
    """.leka/results.sqlite in the current directory; LEKA_HOME overrides the .leka folder."""
    return leka_home() / "results.sqlite"


def new_run_id(method: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{method.replace(':', '_')}-{uuid.uuid4().hex[:6]}"


class ResultStore:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_store_path()
        self._db = open_db(self.path, SCHEMA, what="results store", rows=True)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- runs ---------------------------------------------------------------------------------
    def create_run(self, method: str, target: str, config: dict[str, Any], versions: dict[str, str] | None = None,
                   run_id: str | None = None) -> str:
        rid = run_id or new_run_id(method)
        try:
            self._db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?)",
                             (rid, time.time(), method, target, json.dumps(config, sort_keys=True, default=str),
                              json.dumps(versions or {}, sort_keys=True)))
        except sqlite3.IntegrityError:
            raise StoreError(f"run {rid} already exists in {self.path}") from None
        self.add_event(rid, "started")
        return rid

    def add_event(self, run_id: str, event: str, detail: dict[str, Any] | None = None) -> None:
        self._db.execute("INSERT INTO run_events(run_id, at, event, detail_json) VALUES (?,?,?,?)",
                         (run_id, time.time(), event, json.dumps(detail or {}, default=str)))

    def get_run(self, run_id: str) -> dict[str, Any]:
        row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            # Accept a unique prefix, as git does for commits: run ids are long.
            rows = self._db.execute("SELECT * FROM runs WHERE run_id LIKE ?", (run_id + "%",)).fetchall()
            if len(rows) != 1:
                known = [r["run_id"] for r in self.list_runs()[-5:]]
                raise StoreError(f"no run {run_id!r} in {self.path}" +
                                 (f"; recent runs: {', '.join(known)}" if known else "; the store is empty"))
            row = rows[0]
        events = self._db.execute("SELECT at, event, detail_json FROM run_events WHERE run_id = ? ORDER BY id",
                                  (row["run_id"],)).fetchall()
        return {"run_id": row["run_id"], "created_at": row["created_at"], "method": row["method"],
                "target": row["target"], "config": json.loads(row["config_json"]),
                "versions": json.loads(row["versions_json"]),
                "events": [{"at": e["at"], "event": e["event"], "detail": json.loads(e["detail_json"])}
                           for e in events],
                "status": events[-1]["event"] if events else "unknown"}

    def list_runs(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT run_id, created_at, method, target FROM runs ORDER BY created_at").fetchall()
        return [dict(r) for r in rows]

    # --- samples ------------------------------------------------------------------------------
    def add_sample(self, run_id: str, record: dict[str, Any], candidates: Iterable[dict[str, Any]] = (),
                   measurements: Iterable[tuple[str, str, int, float]] = ()) -> int:
        """Append one finished attempt (its final record, intermediate candidates, per-round timings)
        in one transaction. A second record for the same (run, task, method, sample_idx) is an error."""
        missing = [k for k in ("task", "target", "method", "sample_idx") if record.get(k) is None]
        if missing:
            raise StoreError(f"sample record lacks {', '.join(missing)}")
        vals = [record.get(c) for c in SAMPLE_COLUMNS]
        vals = [int(v) if isinstance(v, bool) else v for v in vals]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            cur = self._db.execute(
                f"INSERT INTO samples(run_id, created_at, {', '.join(SAMPLE_COLUMNS)}, budget_json, versions_json, "
                f"record_json) VALUES ({', '.join('?' * (len(SAMPLE_COLUMNS) + 5))})",
                [run_id, time.time(), *vals, json.dumps(record.get("budget") or {}, default=str),
                 json.dumps(record.get("versions") or {}, default=str), json.dumps(record, default=str)])
            sid = inserted_id(cur)
            for step, c in enumerate(candidates):
                self._db.execute(
                    "INSERT INTO candidates(sample_id, step, candidate_hash, record_json) VALUES (?,?,?,?)",
                    (sid, step, c.get("candidate_hash"), json.dumps(c, default=str)))
            self._db.executemany("INSERT INTO measurements(sample_id, side, stat, idx, ms) VALUES (?,?,?,?,?)",
                                 [(sid, side, stat, int(i), float(ms)) for side, stat, i, ms in measurements])
            self._db.execute("COMMIT")
        except sqlite3.IntegrityError:
            self._db.execute("ROLLBACK")
            raise StoreError(f"run {run_id} already has sample {record['task']}/{record['method']}"
                             f"/#{record['sample_idx']}") from None
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return sid

    def finished_keys(self, run_id: str) -> set[tuple[str, str, int]]:
        rows = self._db.execute("SELECT task, method, sample_idx FROM samples WHERE run_id = ?", (run_id,))
        return {(r[0], r[1], int(r[2])) for r in rows}

    def samples(self, run_id: str) -> list[dict[str, Any]]:
        """Final records of a run, in insertion order (the full JSON record plus run_id)."""
        rows = self._db.execute("SELECT record_json FROM samples WHERE run_id = ? ORDER BY id", (run_id,))
        out = []
        for r in rows:
            d = json.loads(r[0])
            d["run_id"] = run_id
            out.append(d)
        return out

    def measurements(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT s.task, s.sample_idx, m.side, m.stat, m.idx, m.ms FROM measurements m JOIN samples s "
            "ON s.id = m.sample_id WHERE s.run_id = ? ORDER BY m.id", (run_id,))
        return [dict(r) for r in rows]

    # --- export -------------------------------------------------------------------------------
    def export(self, run_id: str, fmt: str) -> str:
        run_id = self.get_run(run_id)["run_id"]
        if fmt == "jsonl":
            return "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in self.samples(run_id))
        if fmt == "csv":
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS), extrasaction="ignore", lineterminator="\n")
            w.writeheader()
            for r in self.samples(run_id):
                row = dict(r)
                row["budget"] = json.dumps(r.get("budget") or {}, sort_keys=True)
                row["versions"] = json.dumps(r.get("versions") or {}, sort_keys=True)
                row["where"] = json.dumps(r.get("where") or {}, sort_keys=True)
                w.writerow(row)
            return buf.getvalue()
        raise StoreError(f"unknown export format {fmt!r}; use jsonl or csv")
