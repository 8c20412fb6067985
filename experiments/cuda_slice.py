"""The CUDA slice of the suite on a remote GPU: tvm-naive, tvm-dlight and LEKA-offline candidates, all built
here, checked for correctness and timed on the GPU in one job batch, the best LEKA candidate picked by the
GPU's measurement (one tuning round of k proposals per task: the offline rules' first k, no feedback between
them beyond that pick).

    .venv/bin/python experiments/cuda_slice.py prepare --out .leka/cuda-slice [--k 4]   # here
    leka gpu-bundle -o .gpu-bundle                                                      # here, once
    # on the GPU host (runtime-only TVM, docs/cuda.md):
    python3 -m leka.remote.multi --jobs 8 .leka/cuda-slice/*/
    .venv/bin/python experiments/cuda_slice.py report --jobs .leka/cuda-slice [--store PATH]  # here
    # round 2, with the GPU's round-1 times as the proposer's history (tasks not yet Fast@1.0 only):
    .venv/bin/python experiments/cuda_slice.py prepare --out .leka/cuda-slice-r2 --feedback .leka/cuda-slice
    (GPU host: the same multi command on .leka/cuda-slice-r2/*/)
    .venv/bin/python experiments/cuda_slice.py report --jobs .leka/cuda-slice --round2 .leka/cuda-slice-r2

Round of 2026-12-01 evening (rules gpu.fused_rows, batched gpu.shared_matmul, 4-lane fp16 gathers), shaped
for the device tool (<= 10 min per command, <= 64 MiB carried: 2 trials, the minimum; the run split by level):

    .venv/bin/python experiments/cuda_slice.py prepare --out .leka/cuda-slice-v2 --k 6 --trials 2 --task-timeout 400
    .venv/bin/python experiments/cuda_slice.py device-command --jobs .leka/cuda-slice-v2 --level l1   # and l2
    tar xzf <files_at>/results_l1.tgz -C .leka/cuda-slice-v2                                   # both halves
    .venv/bin/python experiments/cuda_slice.py report --jobs .leka/cuda-slice-v2 \
        --before experiments/results/cuda_slice_h200_2026-12-01/rows.jsonl --out rows_v2.jsonl

On a task list instead of the slice: `prepare --tasks ID,ID...` (or `--tasks @FILE`), or `prepare --split test`
(the held-out slice: the split's L1/L2 tasks whose patterns the slice never used, picked per domain as the
slice is; `--split dev` to develop rules). report (experiments/cuda_slice_report.py) gives each task both ways,
the fastest correct proposal and what would ship with dlight as the floor, and splits the summary at 10 us of
dlight time (launch-bound below), with the kernels (launches) per module. `device-command --level all
--bundle DIR` runs every job of a folder in one command.

`kernels --jobs DIR [--before DIR]` counts the kernels (launches) per module of prepared jobs, the LEKA
proposals against dlight's, two preparations of the same tasks side by side.

`jetson --jobs DIR` builds every prepared module (its TVMScript is kept in the job folder) for the Jetson
preset (jetson-orin-nano, sm_87). report prints per-task times, LEKA vs dlight (Fast@1.0 by leka.bench.metrics.is_fast, geomean) and
the best kernel's roofline fraction against the H200 peaks (cuda_slice_report.py).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuda_slice_report import _record, report  # noqa: E402 - beside this file

PER_DOMAIN = {"float32": 6, "float16": 2}


def select_slice() -> list:
    from leka.tasks import all_tasks

    return _per_domain(all_tasks())


def select_heldout(split: str) -> list:
    """The split's L1/L2 tasks whose patterns the slice never used, picked as the slice picks its own."""
    from leka.bench.splits import split_tasks

    used = {t.pattern for t in select_slice()}
    return _per_domain([t for t in split_tasks(split) if t.pattern not in used])


def select_tasks(args) -> list:
    """--split's held-out tasks and/or --tasks (ids, comma-separated or @FILE with one a line); else the slice."""
    from leka.tasks import get_task

    if not args.tasks and not args.split:
        return select_slice()
    spec = (Path(args.tasks[1:]).read_text() if args.tasks.startswith("@") else args.tasks) if args.tasks else ""
    picked = select_heldout(args.split) if args.split else []
    return picked + [t for t in map(get_task, spec.replace(",", " ").split()) if t not in picked]


def _per_domain(tasks) -> list:
    """Per (domain, dtype): one shape per pattern, L1 and L2 alternately, PER_DOMAIN of them."""
    by: dict = defaultdict(list)
    for t in sorted(tasks, key=lambda t: (t.level, t.id)):
        if t.level in (1, 2) and t.dtype in PER_DOMAIN and not t.id.startswith("ex-"):
            by[(t.domain, t.dtype)].append(t)
    out = []
    for (domain, dtype), ts in sorted(by.items()):
        seen: set = set()
        picked = []
        for t in ts:  # one shape per pattern, L1 and L2 alternately
            if t.pattern not in seen:
                seen.add(t.pattern)
                picked.append(t)
        l1 = [t for t in picked if t.level == 1]
        l2 = [t for t in picked if t.level == 2]
        mixed = [t for pair in zip(l1, l2) for t in pair] + l1[len(l2):] + l2[len(l1):]
        out += mixed[:PER_DOMAIN[dtype]]
    return out


def _feedback(prev: str, task_id: str) -> tuple[list[dict], int]:
    """The GPU's round-1 measurements as the offline proposer's history (origin line, speedup vs naive as
    the evaluator reports it), and the next free candidate index."""
    res = json.loads((Path(prev) / task_id / "result.json").read_text())
    mods = res["modules"]
    naive = mods.get("tvm-naive", {}).get("median_ms")
    hist = []
    for name, m in mods.items():
        if not name.startswith("leka-"):
            continue
        ok = m["verdict"] == "correct"
        hist.append({"layer": "schedule", "name": name, "rule": m.get("rule"), "knobs": m.get("knobs", {}),
                     "summary": f"origin: {m.get('rule')} knobs={json.dumps(m.get('knobs', {}), sort_keys=True)}",
                     "compiled": m["verdict"] != "load_error", "correct": ok, "failure": None if ok else m["verdict"],
                     "candidate_ms": m.get("median_ms"),
                     "speedup": naive / m["median_ms"] if ok and naive and m.get("median_ms") else None})
    return hist, 1 + max((int(n.split("-")[1]) for n in mods if n.startswith("leka-")), default=-1)


def _modules(task, preset, k: int, feedback: str | None = None) -> tuple[list, list]:
    """(name, module, meta) of naive, dlight and k offline proposals (with the GPU's round-1 measurements
    as feedback when `feedback` names the round-1 jobs); and the failures."""
    from leka.compiler import default_schedule
    from leka.ir import CandidateIR
    from leka.proposers.base import ProposalRequest
    from leka.proposers.offline import OfflineProposer
    from leka.remote.job import parse_candidate

    mods, failed = [("tvm-naive", default_schedule(task.build(), preset, "naive"), {"method": "tvm-naive"})], []
    dl = default_schedule(task.build(), preset, "dlight")
    if dl is not None:
        mods.append(("tvm-dlight", dl, {"method": "tvm-dlight"}))
    ir = CandidateIR.initial(task)
    history, first = _feedback(feedback, task.id) if feedback else ([], 0)
    if feedback and history:  # round 2: the round-1 best is timed again beside the new proposals
        best = min((h for h in history if h.get("candidate_ms")), key=lambda h: h["candidate_ms"])
        mods.append((best["name"], parse_candidate((Path(feedback) / task.id / f"{best['name']}.tvmscript").read_text()),
                     {"method": "leka-offline", "rule": best["rule"], "knobs": best["knobs"], "round": 1}))
    req = ProposalRequest("schedule", ir, task, preset, history, k=k)
    for n, p in enumerate(OfflineProposer().propose(req), start=first):
        meta = {"method": "leka-offline", "rule": p.meta["rule"], "knobs": p.meta["knobs"], "hash": p.ir.hash(),
                "round": 2 if feedback else 1}
        try:
            mods.append((f"leka-{n}", parse_candidate(p.ir.to_tvmscript(preset)), meta))
        except Exception as e:  # noqa: BLE001 - a rule's output that does not flatten is a recorded failure
            failed.append(dict(meta, name=f"leka-{n}", error=str(e)[:200]))
    return mods, failed


def _needs_round2(job: Path) -> bool:
    """A task whose round-1 best was not Fast@1.0 over dlight gets a second round."""
    from leka.bench.metrics import is_fast

    if not (job / "result.json").exists():
        return False
    res = json.loads((job / "result.json").read_text())
    base = "tvm-dlight" if "tvm-dlight" in res["modules"] else "tvm-naive"
    timed = [n for n, m in res["modules"].items() if n.startswith("leka-") and m.get("median_ms")]
    return not any(is_fast(_record({"task": res["task"]}, res, n, base), 1.0) for n in timed)


def prepare(args) -> int:
    """Each task in its own process, killed after --task-timeout (dlight alone takes minutes on some image
    pipelines here): such a task is left out of the slice, and says so."""
    out = Path(args.out)
    for task in select_tasks(args):
        if (out / task.id / "prepare.json").exists():
            continue  # prepared by an earlier call
        if args.feedback and not _needs_round2(Path(args.feedback) / task.id):
            continue
        cmd = [sys.executable, __file__, "prepare-one", task.id, "--out", args.out, "--arch", args.arch,
               "--k", str(args.k), "--trials", str(args.trials), "--number", str(args.number),
               "--rounds", str(args.rounds)] + (["--feedback", args.feedback] if args.feedback else [])
        try:
            subprocess.run(cmd, timeout=args.task_timeout, check=False)
        except subprocess.TimeoutExpired:
            print(json.dumps({"task": task.id, "skipped": f"schedules not made in {args.task_timeout} s"}), flush=True)
    return 0


def prepare_one(args) -> int:
    from leka.compiler import build
    from leka.remote.job import make_multi_job
    from leka.targets import get_target
    from leka.tasks import get_task

    cuda = get_target({**get_target("cuda").target, "arch": args.arch})
    out, task = Path(args.out), get_task(args.task)
    t0 = time.perf_counter()
    try:
        mods, failed = _modules(task, cuda, args.k, args.feedback)
    except Exception as e:  # noqa: BLE001 - e.g. TVM's naive GPU binding refuses a scan: no baseline
        print(json.dumps({"task": task.id, "skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}))
        return 0
    built, scripts = [], {}
    for name, mod, meta in mods:
        try:
            built.append((name, build(mod, cuda), meta))
            scripts[name] = mod.script()
        except Exception as e:  # noqa: BLE001
            failed.append(dict(meta, name=name, error=f"sm_90 build: {str(e)[:200]}"))
    make_multi_job(task, built, cuda, out / task.id, trials=args.trials, number=args.number, rounds=args.rounds)
    for name, text in scripts.items():  # the TVMScript of every module, for the record and the Jetson build
        (out / task.id / f"{name}.tvmscript").write_text(text)
    row = {"task": task.id, "domain": task.domain, "level": task.level, "dtype": task.dtype,
           "modules": [n for n, _, _ in built], "failed": failed, "prepare_s": round(time.perf_counter() - t0, 2)}
    (out / task.id / "prepare.json").write_text(json.dumps(row, indent=1))
    print(json.dumps({k: row[k] for k in ("task", "modules", "prepare_s")}), flush=True)
    return 0


def jetson(args) -> int:
    """Build every module of every prepared job for the Jetson preset (sm_87): codegen + host module."""
    from leka.compiler import build
    from leka.remote.job import parse_candidate

    from leka.targets import get_target

    ok, bad = 0, []
    for d in sorted(p for p in Path(args.jobs).iterdir() if (p / "prepare.json").exists()):
        for f in sorted(d.glob(f"{args.prefix}*.tvmscript")):
            try:
                art = build(parse_candidate(f.read_text()), args.jetson)
                if args.nvcc:  # the source as the board compiles it (TVM can emit CUDA that nvcc rejects)
                    _nvcc(art.source, get_target(args.jetson).target["arch"])
                ok += 1
            except Exception as e:  # noqa: BLE001
                bad.append({"task": d.name, "module": f.stem, "error": str(e).splitlines()[0][:200]})
    print(json.dumps({"jetson": args.jetson, "built": ok, "nvcc": bool(args.nvcc), "failed": len(bad),
                      "failures": bad}))
    return 0


def _nvcc(source: str, arch: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(source)
        res = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-o", str(Path(tmp) / "k.cubin"), str(src)],
                             capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"nvcc {arch}: {res.stderr.strip().splitlines()[0] if res.stderr.strip() else res.returncode}")


def launches(jobs: Path) -> dict:
    """Per prepared task: kernels (launches) per module, from job.json's launch lists."""
    out = {}
    for d in sorted(p for p in jobs.iterdir() if (p / "job.json").exists()):
        out[d.name] = {m["name"]: len(m.get("kernels") or []) for m in json.loads((d / "job.json").read_text())["modules"]}
    return out


def kernels(args) -> int:
    """Kernels per module of the LEKA proposals vs dlight's, per task and in sum (with --before: both)."""
    sets = {"before": launches(Path(args.before))} if args.before else {}
    sets["jobs"] = launches(Path(args.jobs))
    for name, per in sets.items():
        leka = [n for mods in per.values() for m, n in mods.items() if m.startswith("leka-")]
        more = sum(n > mods.get("tvm-dlight", n) for mods in per.values() for m, n in mods.items() if m.startswith("leka-"))
        print(json.dumps({"set": name, "tasks": len(per), "modules": len(leka), "kernels": sum(leka),
                          "per_module": round(sum(leka) / max(len(leka), 1), 2), "more_than_dlight": more,
                          "tasks_min_over_dlight": sum(min((n for m, n in mods.items() if m.startswith("leka-")),
                                                           default=0) > mods.get("tvm-dlight", 99) for mods in per.values())}))
    for task in sets["jobs"]:
        row = {k: [n for m, n in sorted(per.get(task, {}).items()) if m.startswith("leka-")] for k, per in sets.items()}
        print(json.dumps({"task": task, "dlight": sets["jobs"][task].get("tvm-dlight"), **row}))
    return 0


def device_command(args) -> int:
    """The command line for the device tool (run from the repository root there, with the bundle and the
    job folder carried): install the bundle's wheels, run one level's jobs (or all), pack result.json/check.json."""
    jobs, lvl, bun = args.jobs.rstrip("/"), "l[12]" if args.level == "all" else args.level, args.bundle.rstrip("/")
    cmd = (f"python3 -m pip install -q --no-index --no-deps --target {bun}/site {bun}/whl/*.whl && "
           f"export PYTHONPATH=$PWD/{bun}:$PWD/{bun}/site:$PWD GPU_ARCH={args.arch} && "
           f"nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,clocks.current.memory --format=csv > $OUT/gpu.txt; "
           f"S=$(date +%s); python3 -m leka.remote.multi --jobs {args.parallel} {jobs}/{lvl}-*/ > $OUT/multi_{args.level}.log 2>&1; "
           f"echo rc=$? wall=$(( $(date +%s) - S ))s >> $OUT/multi_{args.level}.log; "
           f"cd {jobs} && tar czf $OUT/results_{args.level}.tgz {lvl}-*/result.json {lvl}-*/check.json; "
           f"tail -3 $OUT/multi_{args.level}.log")
    mib = sum(f.stat().st_size for f in Path(jobs).rglob("*") if f.is_file()) / 2**20
    bundle = sum(f.stat().st_size for f in Path(bun).rglob("*") if f.is_file()) / 2**20
    print(json.dumps({"command": cmd, "chars": len(cmd), "carry": [bun, jobs],
                      "carry_mib": round(mib + bundle, 1), "modules": len(list(Path(jobs).glob(f"{lvl}-*/*.so")))}))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--task-timeout", type=int, default=90, help="seconds per task here, else it is left out")
    p.add_argument("--tasks", help="task ids (comma-separated, or @FILE with one a line) instead of the slice "
                                   "(with --split: besides its tasks)")
    p.add_argument("--split", help="the held-out slice: this split's tasks (test, dev) whose patterns the "
                                   "slice never used, picked per domain as the slice is")
    p.set_defaults(func=prepare)
    one = sub.add_parser("prepare-one")
    one.add_argument("task")
    one.set_defaults(func=prepare_one)
    for q in (p, one):
        q.add_argument("--out", default=str(ROOT / ".leka" / "cuda-slice"))
        q.add_argument("--arch", default="sm_90")
        q.add_argument("--k", type=int, default=4)
        q.add_argument("--trials", type=int, default=2)
        q.add_argument("--number", type=int, default=100)
        q.add_argument("--rounds", type=int, default=7)
        q.add_argument("--feedback", help="round 2: the round-1 job folders (results in), for tasks not yet fast")
    j = sub.add_parser("jetson")
    j.add_argument("--jobs", default=str(ROOT / ".leka" / "cuda-slice"))
    j.add_argument("--jetson", default="jetson-orin-nano")
    j.add_argument("--nvcc", action="store_true", help="also compile each module's CUDA source with nvcc here")
    j.add_argument("--prefix", default="", help="only modules whose name starts so (leka-: the proposals)")
    j.set_defaults(func=jetson)
    r = sub.add_parser("report")
    r.add_argument("--jobs", default=str(ROOT / ".leka" / "cuda-slice"))
    r.add_argument("--out", help="write per-task rows + summary as JSONL")
    r.add_argument("--store", help="also write the records into this results store (SQLite)")
    r.add_argument("--round2", help="round-2 job folders: their results replace round 1's for those tasks")
    r.add_argument("--before", help="an earlier report's rows.jsonl: only its tasks, and a then/now table")
    r.set_defaults(func=report)
    kc = sub.add_parser("kernels", help="kernels per module of prepared jobs (LEKA proposals vs dlight)")
    kc.add_argument("--jobs", required=True)
    kc.add_argument("--before", help="the same tasks prepared with other rules: both sets side by side")
    kc.set_defaults(func=kernels)
    dc = sub.add_parser("device-command", help="print the device tool's command for one level's jobs")
    dc.add_argument("--jobs", default=".leka/cuda-slice-v2")
    dc.add_argument("--level", choices=("l1", "l2", "all"), required=True)
    dc.add_argument("--bundle", default=".gpu-bundle", help="the runtime bundle's folder (`leka gpu-bundle -o`)")
    dc.add_argument("--arch", default="sm_90")
    dc.add_argument("--parallel", type=int, default=12, help="jobs checked at once on the GPU host (phase 1)")
    dc.set_defaults(func=device_command)
    a = ap.parse_args()
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
