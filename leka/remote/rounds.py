"""One tuning round on a remote host: `batch` builds every pending measurement into job folders here,
the remote host runs them with the runtime only (python -m leka.remote.multi), `ingest` reads the results
back, judged here (leka.remote.judge: outputs re-checked against the references this side kept, timing
checked as local timing is), for the paused runs."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .judge import BASE
from .pending import PendingStore


def batch(store: PendingStore, out: str | Path, *, trials: int = 2, number: int = 20, rounds: int = 7) -> list[Path]:
    """Job folders for every open request (one per task x target x baseline) under out/round-N; [] if none."""
    from leka.compiler import build, default_schedule
    from leka.evaluator.floor import run_floor
    from leka.targets import get_target

    from .job import make_multi_job, parse_candidate
    from .judge import job_record

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
            name = f"{task_id}--{target}--{baseline}"
            jobs.append(make_multi_job(task, mods, target, root / name, trials=trials, seed=rnd, number=number,
                                       rounds=rounds, job_id=f"round-{rnd}/{name}"))
            floor = run_floor(task, get_target(target))
            store.put_job(job_record(jobs[-1], floor.seconds, floor.describe()), rnd)
    return jobs


def ingest(store: PendingStore, root: str | Path) -> dict[str, int]:
    """Results of every job folder under root (result.json) into the store, each judged here against the
    job's record this side kept (leka.remote.judge); counts of new, repeated, jobs without a result, and jobs
    or modules this side did not ask for (not stored). A malformed job.json or result.json is a one-line
    error before anything is stored."""
    from leka.errors import LekaError
    from leka.outside_files import read_json_object as read_json

    from .judge import BASE, baseline_timing, judge, modules_of, references

    jobs = sorted(Path(root).rglob("job.json")) if Path(root).is_dir() else []
    if not jobs:
        raise LekaError(f"{root}: no job folders (job.json) here; `leka remote batch -o DIR` writes them")
    counts = {"new": 0, "already_known": 0, "jobs_without_result": 0, "not_asked": 0}
    read = []
    for job_json in jobs:  # everything parsed first: a malformed file stores nothing
        rec = store.job(read_json(job_json, "job.json").get("job_id"))
        if rec is None:
            counts["not_asked"] += 1
            continue
        if not (job_json.parent / "result.json").exists():
            counts["jobs_without_result"] += 1
            continue
        res_path = job_json.parent / "result.json"
        res = read_json(res_path, "result.json")
        read.append((job_json.parent, rec, res, modules_of(res, res_path)))
    rounds_seen: set[int] = set()
    for job_dir, rec, res, mods in read:
        refs = references(job_dir, rec)
        base = baseline_timing(job_dir, rec, mods, refs)
        for name in mods:
            key = rec["modules"].get(name)
            if name == BASE:
                continue
            if key is None or (rnd := store.round_of(key)) is None:  # a module this side did not ask for
                counts["not_asked"] += 1
                continue
            meta = {"round": rnd, "device": str(res.get("device_name"))[:80], "job": job_dir.name}
            counts["new" if store.put_result(key, rnd, judge(job_dir, rec, mods, name, meta, refs, base))
                   else "already_known"] += 1
            rounds_seen.add(rnd)
    for rnd in rounds_seen:
        store.mark_ingested(rnd)
    return counts
