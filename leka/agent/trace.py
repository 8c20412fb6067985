"""The run trace (SQLite, next to the results store in the .leka folder) and the optimisation path.

Tables: agent_runs (one row per run: task, target, proposer, options, final record), agent_steps
(one JSON step record per step: layer, proposals with IR diff, prompt hash, compile/verify/timing
results, speedup so far, budget spent, routing decision) and agent_journal (write-ahead proposals and
measurements, so a resumed run neither pays nor measures twice). LangGraph's checkpoints live in a
separate file in the same folder (checkpoint_path()).
"""
from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from leka.errors import LekaError
from leka.storage import leka_home, open_db

from .state import LAYERS


class UnknownRunError(LekaError):
    pass


def trace_path() -> Path:
    return leka_home() / "agent.sqlite"


def checkpoint_path() -> Path:
    return leka_home() / "agent_checkpoints.sqlite"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_runs (
  run_id TEXT PRIMARY KEY, task TEXT NOT NULL, target TEXT NOT NULL, proposer TEXT NOT NULL,
  options TEXT NOT NULL, created REAL NOT NULL, status TEXT NOT NULL, final TEXT);
CREATE TABLE IF NOT EXISTS agent_steps (
  run_id TEXT NOT NULL, step INTEGER NOT NULL, layer TEXT NOT NULL, record TEXT NOT NULL,
  PRIMARY KEY (run_id, step));
CREATE TABLE IF NOT EXISTS agent_journal (
  run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL,
  PRIMARY KEY (run_id, key));
"""


class TraceStore:
    """Thread-safe; each write commits at once (a kill loses at most the write in flight)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else trace_path()
        self._lock = threading.Lock()
        self._db = open_db(self.path, _SCHEMA, what="LEKA run trace", threads=True)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, params)
            self._db.commit()

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # runs
    def create_run(self, run_id: str, task: str, target: str, proposer: str, options: dict[str, Any]) -> None:
        self._write("INSERT INTO agent_runs VALUES (?,?,?,?,?,?,?,NULL)",
                    (run_id, task, target, proposer, json.dumps(options), time.time(), "running"))

    def get_run(self, run_id: str) -> dict[str, Any]:
        rows = self._read("SELECT run_id, task, target, proposer, options, created, status, final "
                          "FROM agent_runs WHERE run_id=?", (run_id,))
        if not rows:
            raise UnknownRunError(f"no LEKA run {run_id!r} in {self.path}; `leka trace --list` shows runs")
        r = rows[0]
        return {"run_id": r[0], "task": r[1], "target": r[2], "proposer": r[3], "options": json.loads(r[4]),
                "created": r[5], "status": r[6], "final": json.loads(r[7]) if r[7] else None}

    def resolve(self, run_id: str) -> str:
        """The full id of run `run_id` or of the one run it is a unique prefix of (ids are long)."""
        if self._read("SELECT 1 FROM agent_runs WHERE run_id=?", (run_id,)):
            return run_id
        like = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._read("SELECT run_id FROM agent_runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY created DESC "
                          "LIMIT 4", (like,))
        if len(rows) == 1:
            return rows[0][0]
        if rows:
            raise UnknownRunError(f"run id prefix {run_id!r} is ambiguous: {', '.join(r[0] for r in rows[:3])}, ...")
        raise UnknownRunError(f"no LEKA run {run_id!r} in {self.path}; `leka trace --list` shows runs")

    def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._read("SELECT run_id FROM agent_runs ORDER BY created DESC LIMIT ?", (limit,))
        return [self.get_run(r[0]) for r in rows]

    def set_status(self, run_id: str, status: str, final: dict[str, Any] | None = None) -> None:
        if final is None:
            self._write("UPDATE agent_runs SET status=? WHERE run_id=?", (status, run_id))
        else:
            self._write("UPDATE agent_runs SET status=?, final=? WHERE run_id=?",
                        (status, json.dumps(final), run_id))

    # steps
    def put_steps(self, run_id: str, steps: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO agent_steps VALUES (?,?,?,?)",
                                 [(run_id, s["step"], s["layer"], json.dumps(s)) for s in steps])
            self._db.commit()

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._read("SELECT record FROM agent_steps WHERE run_id=? ORDER BY step", (run_id,))
        return [json.loads(r[0]) for r in rows]

    # journal (the agent.context.Journal protocol)
    def journal_get(self, run_id: str, key: str) -> Any | None:
        rows = self._read("SELECT value FROM agent_journal WHERE run_id=? AND key=?", (run_id, key))
        return json.loads(rows[0][0]) if rows else None

    def journal_put(self, run_id: str, key: str, value: Any) -> None:
        self._write("INSERT OR REPLACE INTO agent_journal VALUES (?,?,?,?)",
                    (run_id, key, json.dumps(value), time.time()))

    def journal_keys(self, run_id: str) -> list[str]:
        return [r[0] for r in self._read("SELECT key FROM agent_journal WHERE run_id=? ORDER BY created",
                                         (run_id,))]


def contributions(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Attribute the speedup to the accepted decisions: each bought its speedup over the IR it was built
    on, by layer. An algorithm rewrite kept as the base without being faster (step record "base") counts
    with its own ratio (often < 1) once a decision built on it is accepted; the decisions on top of it
    are then credited from its speedup, so the product is still the best speedup. A winning control
    candidate (scheduled on the task's own algorithm, see nodes._control_due) drops the rewrite: the
    path restarts from the initial IR."""
    path: list[dict[str, Any]] = []
    by_layer = {name: 1.0 for name in LAYERS}
    current: float | None = None  # speedup of the IR the next decision builds on
    pending: dict[str, Any] | None = None  # a base rewrite, counted once something on it is accepted

    def entry(s: Mapping[str, Any], cand: Mapping[str, Any], before: float, after: float, kind: str) -> dict[str, Any]:
        ratio = after / (before or 1.0)  # from "no runnable kernel yet" (0): the speedup over the baseline
        by_layer[s["layer"]] *= ratio
        return {"step": s["step"], "layer": s["layer"], "kind": kind, "summary": cand.get("summary", ""),
                "rationale": cand.get("rationale", ""), "prompt_hash": cand.get("prompt_hash"),
                "speedup_before": before, "speedup_after": after, "ratio": ratio,
                "candidate_ms": cand.get("candidate_ms")}

    for s in steps:
        if current is None:
            current = s.get("best_before") or 0.0
        if s.get("base") is not None and s.get("accepted") is None:
            pending = {"step": s, "cand": s["candidates"][s["base"]]}
            continue
        idx = s.get("accepted")
        if idx is None:
            continue
        if s["candidates"][idx].get("control"):  # the earlier algorithm decisions are not in this IR
            path.clear()
            by_layer.update({name: 1.0 for name in LAYERS})
            pending, current = None, steps[0].get("best_before") or 0.0
        if pending is not None:
            base_speed = float(pending["cand"].get("speedup") or current)
            path.append(entry(pending["step"], pending["cand"], current, base_speed, "base"))
            current, pending = base_speed, None
        path.append(entry(s, s["candidates"][idx], current, s["best_after"], "accepted"))
        current = s["best_after"]
    total = math.prod(by_layer.values())
    return {"path": path, "by_layer": by_layer, "total": total}


def decision_irs(store: TraceStore, run_id: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The IR of every accepted decision (and of each kept base rewrite), in step order, read from the
    write-ahead journal's proposals (the step records keep summaries and hashes, not IRs)."""
    out = []
    for s in steps:
        for kind, idx in (("base", s.get("base")), ("accepted", s.get("accepted"))):
            if idx is None or (kind == "base" and s.get("accepted") == idx):
                continue
            proposals = store.journal_get(run_id, f"step{s['step']}:proposals") or []
            if idx < len(proposals) and proposals[idx].get("ir"):
                cand = s["candidates"][idx]
                out.append({"step": s["step"], "layer": s["layer"], "kind": kind, "summary": cand.get("summary", ""),
                            "speedup": cand.get("speedup"), "ir": proposals[idx]["ir"]})
    return out


def contained_in(ir: dict[str, Any], final: dict[str, Any]) -> bool:
    """Does the kernel `final` (IR JSON) still hold decision `ir`? Same algorithm, its schedule a prefix of
    the final schedule, its memory steps all present (a later schedule replaces the whole list)."""
    sched, mem = ir.get("schedule") or [], ir.get("memory") or []
    return (ir.get("algorithm") == final.get("algorithm") and (final.get("schedule") or [])[:len(sched)] == sched
            and all(m in (final.get("memory") or []) for m in mem))


_TASK_IR = {"algorithm": {"kind": "task"}, "schedule": [], "memory": []}  # CandidateIR.initial's layers


def decided_layer(ir: dict[str, Any], before: dict[str, Any] | None) -> str | None:
    """The lowest layer decision `ir` changes from the IR it was built on (None: the task's own definition):
    its gain is that layer's. A memory-step proposal that brings a whole schedule of its own is a schedule
    decision; a memory decision keeps the schedule it was built on. None when nothing changed."""
    base = before or _TASK_IR
    return next((name for name in LAYERS if (ir.get(name) or _TASK_IR[name]) != (base.get(name) or _TASK_IR[name])),
                None)


def kernel_credit(contrib: dict[str, Any], irs: list[dict[str, Any]], best_ir: dict[str, Any] | None
                  ) -> dict[str, Any]:
    """Per-layer credit of the decisions the final kernel contains, each credited to the layer it changes
    (decided_layer; the step's layer when its IR is unknown). A decision that a later one replaced (a new
    schedule for the same loops, a restart) passes its ratio on to the next decision that is in the kernel,
    so no layer is credited for code the kernel lacks; decisions after the kernel's last one (finalize kept
    an earlier kernel) are credited nothing. Path entries gain credited_layer and in_kernel (True/False/None
    when the IR or the final kernel is unknown)."""
    ir_of = {(d["step"], d["kind"]): d["ir"] for d in irs}
    by_layer = {name: 1.0 for name in LAYERS}
    carried, path, before = 1.0, [], None
    for p in contrib["path"]:
        ir = ir_of.get((p["step"], p["kind"]))
        layer = (decided_layer(ir, before) if ir is not None else None) or p["layer"]
        before = ir if ir is not None else before
        inside = None if ir is None or best_ir is None else contained_in(ir, best_ir)
        entry = dict(p, in_kernel=inside, credited_layer=layer)
        if inside is False:
            carried *= p["ratio"]
        else:
            entry["credit"] = p["ratio"] * carried
            by_layer[layer] *= entry["credit"]
            carried = 1.0
        path.append(entry)
    # decisions with no successor in the kernel (finalize fell back to an earlier kernel) credit nothing
    return {"path": path, "by_layer": by_layer, "total": math.prod(by_layer.values())}
