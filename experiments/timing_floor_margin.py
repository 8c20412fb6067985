"""How far honest timings stay above the evaluator's per-run floor (leka/evaluator/floor.py).

For every correct sample in the given stores (candidate and baseline medians, and each recorded round) and
every module of CUDA-slice rows (`rows*.jsonl`: H200 milliseconds per module), the ratio of the measured
run time to the floor of its task on its target. The floor is sound only if no honest ratio comes near 1.

    python experiments/timing_floor_margin.py --store a.sqlite --store b.sqlite \
        --rows experiments/results/cuda_slice_h200_2026-12-01/rows.jsonl
"""
from __future__ import annotations

import argparse
import json
import sqlite3
from functools import lru_cache
from pathlib import Path

from leka.evaluator.floor import run_floor
from leka.targets import get_target
from leka.tasks import get_task


@lru_cache(maxsize=None)
def floor_s(task_id: str, target: str) -> float | None:
    try:
        return run_floor(get_task(task_id), get_target(target)).seconds
    except Exception:  # a user task or target this checkout does not have
        return None


def from_store(path: str) -> list[tuple[float, str]]:
    """(ratio to floor, label) of every median and recorded round of correct samples."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = []
    rows = db.execute("select s.id, s.task, s.target, s.method, s.candidate_ms, s.baseline_ms from samples s "
                      "where s.correct = 1 and s.candidate_ms is not null").fetchall()
    for sid, task, target, method, cand_ms, base_ms in rows:
        f = floor_s(task, "host-cpu" if target == "custom" else target)
        if not f:
            continue
        times = [("candidate", cand_ms), ("baseline", base_ms)]
        times += [(side, ms) for side, ms in db.execute(
            "select side, ms from measurements where sample_id = ? and stat in ('round', 'min')", (sid,))]
        for side, ms in times:
            if ms:
                out.append((ms / 1e3 / f, f"{task} {method} {side} {ms * 1e3:.3g} µs (floor {f * 1e9:.3g} ns)"))
    return out


def from_rows(path: str) -> list[tuple[float, str]]:
    out = []
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        if "task" not in row:  # summary lines
            continue
        f = floor_s(row["task"], "cuda")
        for module, ms in (row.get("ms") or {}).items():
            if f and ms:
                out.append((ms / 1e3 / f, f"{row['task']} {module} {ms * 1e3:.3g} µs (floor {f * 1e9:.3g} ns)"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", action="append", default=[], help="SQLite results store (repeatable)")
    ap.add_argument("--rows", action="append", default=[], help="CUDA-slice rows JSONL (repeatable)")
    ap.add_argument("--show", type=int, default=8, help="tightest ratios printed")
    args = ap.parse_args()
    for label, paths, read in (("host-cpu stores", args.store, from_store), ("cuda rows", args.rows, from_rows)):
        found = [r for p in paths for r in read(p)]
        if not found:
            continue
        found.sort()
        tasks = {lab.split()[0] for _r, lab in found}
        print(f"{label}: {len(found)} timings of {len(tasks)} tasks; smallest time / floor = {found[0][0]:,.1f}")
        for ratio, lab in found[:args.show]:
            print(f"  {ratio:10,.1f}x  {lab}")


if __name__ == "__main__":
    main()
