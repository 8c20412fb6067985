"""The CUDA slice's report (experiments/cuda_slice.py report): per task, the fastest correct proposal
against dlight, and what would ship with dlight as the floor (leka/agent/floor.py: a proposal replaces
dlight's kernel only when faster), summarized both ways, and split by dlight's time: above LAUNCH_FLOOR_MS
schedules matter; below it the H200 is launch-bound (a kernel launch costs ~3.5 us there). Kernels per
module (the job's launch list) show fusion: a proposal with fewer launches than dlight's.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

# NVIDIA H200 SXM datasheet peaks (nvidia.com/en-us/data-center/h200; not in /work/shared/reference, which
# lists edge boards only): FP32 67 TFLOP/s (CUDA cores), FP16 without tensor cores ~134 TFLOP/s (2x FP32),
# HBM3e 4.8 TB/s. None of the schedules here uses tensor cores, so the CUDA-core peaks are the roof.
H200_PEAK_GFLOPS = {"float32": 67_000.0, "float16": 134_000.0}
H200_BW_GBS = 4_800.0
from leka.agent.floor import LAUNCH_FLOOR_MS  # noqa: E402 - dlight above it: schedules matter; under: launches
SLOWER = 0.95  # a task below this ratio to dlight is a loss beyond the usual noise of these one-shot timings


def _record(task: dict, res: dict, name: str, base: str) -> dict:
    m, b = res["modules"][name], res["modules"].get(base, {})
    ok = m.get("verdict") == "correct"
    rec = {"task": task["task"], "target": res["target"], "method": m.get("method"), "compiled": True, "correct": ok,
           "failure": None if ok else m.get("verdict"), "candidate_ms": m.get("median_ms"),
           "baseline": base, "baseline_ms": b.get("median_ms")}
    if ok and b.get("median_ms") and m.get("median_ms"):
        rec["speedup"] = b["median_ms"] / m["median_ms"]
        rec["detail"] = {"timing": {"candidate": {"rounds_s": m["rounds_s"], "min_s": min(m["rounds_s"])},
                                    "baseline": {"rounds_s": b["rounds_s"], "min_s": min(b["rounds_s"])}}}
    return rec


def _roofline(job: dict, ms: float, dtype: str) -> float:
    t_compute = job["flops"] / (H200_PEAK_GFLOPS.get(dtype, 67_000.0) * 1e9) if job.get("flops") else 0.0
    t_mem = job["bytes"] / (H200_BW_GBS * 1e9) if job.get("bytes") else 0.0
    return max(t_compute, t_mem) / (ms * 1e-3)


def task_row(d: Path, prep: dict, res: dict, job: dict) -> dict:
    """One task's row: the best proposal (fastest correct), what ships (it, if faster than the baseline;
    else the baseline itself: the floor), kernel launches of each, and whether dlight is launch-bound."""
    from leka.bench.metrics import is_fast

    mods = res["modules"]
    base = "tvm-dlight" if "tvm-dlight" in mods else "tvm-naive"
    timed = [n for n in mods if n.startswith("leka-") and mods[n].get("verdict") == "correct" and mods[n].get("median_ms")]
    best = min(timed, key=lambda n: mods[n]["median_ms"], default=None)
    rec = _record(prep, res, best, base) if best else {"task": prep["task"], "correct": False, "compiled": True}
    ratio = rec.get("speedup")
    ships = best if ratio is not None and ratio > 1.0 else base
    launches = {m["name"]: len(m.get("kernels") or []) for m in job.get("modules", [])}
    base_ms = mods.get(base, {}).get("median_ms")
    return {**prep, "dir": str(d), "baseline": base,
            "verdicts": {n: mods[n]["verdict"] for n in mods},
            "trials": {n: len(mods[n].get("trials") or []) for n in mods},  # inputs each was checked on
            "ms": {n: mods[n].get("median_ms") for n in mods},
            "best": best, "best_rule": mods[best].get("rule") if best else None,
            "speedup_vs_dlight": ratio, "fast": is_fast(rec, 1.0),
            "ships": ships, "ship_vs_dlight": ratio if ships == best else 1.0,
            "ship_fast": ships == best and is_fast(rec, 1.0),
            "launches": {"baseline": launches.get(base), "best": launches.get(best)},
            "fused": bool(best and launches.get(best, 0) < launches.get(base, 0)),
            "launch_bound": base_ms is not None and base_ms <= LAUNCH_FLOOR_MS,
            "roofline": _roofline(job, mods[best]["median_ms"], prep["dtype"]) if best else None}


def _stats(rows: list[dict], ratio_key: str, fast_key: str) -> dict:
    ratios = [r[ratio_key] for r in rows if r.get(ratio_key)]
    return {"tasks": len(rows), "fast_at_1": sum(bool(r[fast_key]) for r in rows),
            "geomean_vs_dlight": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3) if ratios else None,
            "below_0.95": sorted(r["task"] for r in rows if (r.get(ratio_key) or 0) < SLOWER)}


def summarize(rows: list[dict], gpu_names: set) -> dict:
    """Both ways (best proposal; what ships), overall and split at LAUNCH_FLOOR_MS, plus fusion's count."""
    both = {"best_proposal": ("speedup_vs_dlight", "fast"), "would_ship": ("ship_vs_dlight", "ship_fast")}
    groups = {"all": rows, f"dlight_above_{LAUNCH_FLOOR_MS * 1e3:g}us": [r for r in rows if not r["launch_bound"]],
              "launch_floor": [r for r in rows if r["launch_bound"]]}
    fused = [r for r in rows if r["fused"]]
    return {"tasks": len(rows), "gpu": sorted(x for x in gpu_names if x),
            **{g: {way: _stats(rs, *keys) for way, keys in both.items()} for g, rs in groups.items()},
            "fewer_launches_than_dlight": {"tasks": len(fused), "faster": sum((r["speedup_vs_dlight"] or 0) > 1.0
                                                                               for r in fused)},
            "wrong_or_crash": sum(v != "correct" for r in rows for v in r["verdicts"].values()),
            "min_trials": min((t for r in rows for t in r["trials"].values()), default=None)}


def report(args) -> int:
    rows, gpu_names = [], set()
    before = _before(args.before)
    for d in sorted(p for p in Path(args.jobs).iterdir() if (p / "result.json").exists()):
        if before and d.name not in before:
            continue  # the comparison covers the earlier slice's tasks only
        if args.round2 and (Path(args.round2) / d.name / "result.json").exists():
            d = Path(args.round2) / d.name  # round 2 re-timed the round-1 best beside the new proposals
        res, job = json.loads((d / "result.json").read_text()), json.loads((d / "job.json").read_text())
        gpu_names.add(res.get("device_name"))
        rows.append(task_row(d, json.loads((d / "prepare.json").read_text()), res, job))
    for r in rows:
        best_ms = r["ms"].get(r["best"]) if r["best"] else None
        print(f"{r['task']:<44} {r['dtype']:<8} {r['baseline']:<10} {r['ms'].get(r['baseline']) or math.nan:9.4f} ms  "
              f"best {r['best'] or '-':<7} {best_ms or math.nan:9.4f} ms  x{r['speedup_vs_dlight'] or math.nan:6.2f} "
              f"ships x{r['ship_vs_dlight']:5.2f} {'FAST' if r['ship_fast'] else '    '} "
              f"launches {r['launches']['baseline']}->{r['launches']['best']} "
              f"{'floor' if r['launch_bound'] else '>10us'} roof {r['roofline'] or 0:.3f} {r['best_rule'] or ''}")
    summary = summarize(rows, gpu_names)
    print(json.dumps(summary, indent=1))
    if before:
        _compare(rows, before)
    if args.store:
        _store(args.store, args.jobs, rows)
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r) for r in rows + [{"summary": summary}]) + "\n")
    return 0


def _before(path: str | None) -> dict[str, dict]:
    """Per-task rows of an earlier report (its rows.jsonl), by task id."""
    if not path:
        return {}
    rows = [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]
    return {r["task"]: r for r in rows if "task" in r}


def _compare(rows: list[dict], before: dict[str, dict]) -> None:
    """Each task's best LEKA kernel vs dlight, then and now (each run's own dlight time: runs differ)."""
    print(f"{'task':<44} {'then':>7} {'now':>7}  rule now")
    for r in rows:
        b = before[r["task"]]
        then, now = b.get("speedup_vs_dlight"), r.get("speedup_vs_dlight")
        print(f"{r['task']:<44} {then or float('nan'):7.2f} {now or float('nan'):7.2f}  {r['best_rule'] or ''}"
              f"{'  FAST' if r['fast'] else ''}{'  (was fast)' if b.get('fast') else ''}")
    missing = sorted(set(before) - {r["task"] for r in rows})
    if missing:
        print(json.dumps({"not_in_this_run": missing}))


def _store(path: str, jobs: str, rows: list[dict]) -> None:
    """One store run per method (tvm-naive, tvm-dlight, leka-offline = the GPU-picked best of k), one sample
    per task, speedup against dlight (naive where dlight does not apply)."""
    import hashlib

    from leka.bench.store import ResultStore

    with ResultStore(path) as store:
        for method in ("tvm-naive", "tvm-dlight", "leka-offline"):
            rid = store.create_run(f"{method}-cuda-slice", "cuda-h200", {"experiment": "cuda_slice", "jobs": jobs})
            for r in rows:
                res = json.loads((Path(r["dir"]) / "result.json").read_text())
                name = r["best"] if method == "leka-offline" else method
                if name not in res["modules"]:
                    continue
                rec = _record(r, res, name, r["baseline"])
                src = Path(r["dir"]) / f"{name}.tvmscript"
                rec.update(pattern=None, level=r["level"], domain=r["domain"], method=method, sample_idx=0,
                           proposer="leka-offline-rules" if method == "leka-offline" else None,
                           candidate_hash=hashlib.sha256(src.read_bytes()).hexdigest()[:16] if src.exists() else None,
                           roofline_fraction=r["roofline"] if method == "leka-offline" else None,
                           baseline_spread=None, error=res["modules"][name].get("error"))
                store.add_sample(rid, rec)
            store.add_event(rid, "done")
            print(f"store: {rid}")

