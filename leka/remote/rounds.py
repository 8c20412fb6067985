"""One tuning round on a remote host: `batch` builds every pending measurement into job folders here,
the remote host runs them with the runtime only (python -m leka.remote.multi), `ingest` reads the results
back (re-checking the returned outputs against the references computed here) for the paused runs."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from .pending import PendingStore

BASE = "baseline"


def batch(store: PendingStore, out: str | Path, *, trials: int = 2, number: int = 20, rounds: int = 7) -> list[Path]:
    """Job folders for every open request (one per task x target x baseline) under out/round-N; [] if none."""
    from leka.compiler import build, default_schedule

    from .job import make_multi_job, parse_candidate

    open_reqs = store.open_requests()
    if not open_reqs:
        return []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in open_reqs:
        groups[(r["task"], r["target"], r["baseline"])].append(r)
    root = Path(out)
    rnd = store.new_round(str(root), [r["key"] for r in open_reqs])
    root = root / f"round-{rnd}"
    jobs = []
    for (task_id, target, baseline), reqs in groups.items():
        task = store.task(task_id)
        base = default_schedule(task.build(), target, "dlight" if baseline == "tvm-dlight" else "naive")
        if base is None:  # dlight does not apply: its default is the naive lowering, and that is timed
            base, baseline = default_schedule(task.build(), target, "naive"), "tvm-naive"
        mods = [(BASE, build(base, target), {"method": baseline})]
        for r in reqs:
            try:
                mods.append((f"c-{r['key']}", build(parse_candidate(r["source"]), target),
                             {"key": r["key"], "run_id": r["run_id"]}))
            except Exception as e:  # noqa: BLE001 - does not build here: answered now, nothing to ship
                store.put_result(r["key"], rnd, {"compiled": False, "correct": False, "failure": "compile_error",
                                                 "error": str(e).strip().splitlines()[0][:300] if str(e).strip() else "?"})
        if len(mods) > 1:
            jobs.append(make_multi_job(task, mods, target, root / f"{task_id}--{target}--{baseline}",
                                       trials=trials, seed=rnd, number=number, rounds=rounds))
    return jobs


def _recheck(job_dir: Path, job: dict, name: str) -> int | None:
    """Mismatches of the outputs the remote host sent back, compared here (None: no outputs came back)."""
    from .run_job import compare

    bad = 0
    for k, trial in enumerate(job["trials"]):
        path = job_dir / f"out_{name}_{k}.npz"
        if not path.exists():
            return None
        got, ref = np.load(path), np.load(job_dir / trial["file"])
        n_out = len(job["args"]) - job["n_inputs"]
        bad += sum(compare(got[f"arr_{i}"], ref[f"out_{i}"], job["rtol"], job["atol_scale"])[0] for i in range(n_out))
    return bad


_FAILURE = {"wrong": "wrong", "crash": "crash", "load_error": "compile_error", "runtime_error": "runtime_error"}


def _result(job_dir: Path, job: dict, res: dict, name: str, rnd: int | None) -> dict[str, Any]:
    m, b = res["modules"][name], res["modules"].get(BASE, {})
    out: dict[str, Any] = {"compiled": m["verdict"] != "load_error", "correct": m["verdict"] == "correct",
                           "failure": _FAILURE.get(m["verdict"]), "error": m.get("error"),
                           "remote": {"round": rnd, "device": res.get("device_name"), "job": job_dir.name},
                           "trials": m.get("trials")}
    if out["correct"]:
        bad = _recheck(job_dir, job, name)
        if bad:  # the remote host said correct; its outputs say otherwise here
            out.update(correct=False, failure="wrong", error=f"{bad} mismatches re-checked on the build host")
    if out["correct"] and m.get("rounds_s") and b.get("rounds_s"):
        c_ms, b_ms = m["median_ms"], b["median_ms"]
        out.update(candidate_ms=c_ms, baseline_ms=b_ms, speedup=b_ms / c_ms, baseline=b.get("method"),
                   rounds=len(m["rounds_s"]),
                   spread=(max(m["rounds_s"]) - min(m["rounds_s"])) * 1e3 / c_ms,
                   baseline_spread=(max(b["rounds_s"]) - min(b["rounds_s"])) * 1e3 / b_ms,
                   detail={"timing": {"candidate": {"rounds_s": m["rounds_s"], "min_s": min(m["rounds_s"])},
                                      "baseline": {"rounds_s": b["rounds_s"], "min_s": min(b["rounds_s"])}}})
    return out


def ingest(store: PendingStore, root: str | Path) -> dict[str, int]:
    """Results of every job folder under root (result.json) into the store; counts of new and repeated."""
    from leka.errors import LekaError

    jobs = sorted(Path(root).rglob("job.json")) if Path(root).is_dir() else []
    if not jobs:
        raise LekaError(f"{root}: no job folders (job.json) here; `leka remote batch -o DIR` writes them")
    new = repeated = missing = 0
    rounds_seen: set[int] = set()
    for job_json in jobs:
        job_dir = job_json.parent
        job = json.loads(job_json.read_text())
        if not (job_dir / "result.json").exists():
            missing += 1
            continue
        res = json.loads((job_dir / "result.json").read_text())
        for name in res["modules"]:
            if not name.startswith("c-"):
                continue
            key = name[2:]
            rnd = store.round_of(key)
            if store.put_result(key, rnd, _result(job_dir, job, res, name, rnd)):
                new += 1
            else:
                repeated += 1
            if rnd is not None:
                rounds_seen.add(rnd)
    for rnd in rounds_seen:
        store.mark_ingested(rnd)
    return {"new": new, "already_known": repeated, "jobs_without_result": missing}


