"""Job folders with many modules per task (baselines and every candidate of a tuning round), run with
the TVM runtime alone:  python -m leka.remote.multi [--jobs N] DIR...

Phase 1 (correctness, N jobs at once, one process per job): each module is loaded (CUDA source compiled
by the bundle's nvcc callback, cubins cached in GPU_CUBIN_CACHE) and run on every trial (at least 2, each of
its own distribution and seed stream: leka.remote.job.make_multi_job) with NaN-prefilled
outputs, compared with the NumPy reference computed on the build host; the outputs are written back
(`DIR/out_<module>_<trial>.npz`) for checking there. A kernel that faults (illegal address: the CUDA
context is lost) is recorded as `crash` and a fresh process goes on with the next module.
Phase 2 (timing, one job at a time, every job in one process: a process per job cost ~6 s of start, import
and CUDA context each, 280-350 s of a 45-51 job round on the H200; a process that dies goes on in a fresh
one from the next job): the correct modules are timed alternately, `rounds` x
`time_evaluator(number)` (fewer runs for a slow
kernel: about ROUND_S per round), so drift hits all alike. Writes DIR/check.json and DIR/result.json.
GPU_CUBIN_CACHE defaults to one folder per host (CUBIN_CACHE): phase 2 loads the cubins phase 1 compiled
instead of running nvcc again for every module, one job at a time (~1 s a module), and a later round reuses
dlight's and every repeated candidate's. The last line printed is the round's wall time by phase.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .run_job import _setup_cuda, compare

CUBIN_CACHE = Path(tempfile.gettempdir()) / "leka-cubins"
ROUND_S = 0.005  # each timing round of a module lasts about this long (µs kernels: up to `number` runs)
_FATAL = ("illegal", "CUDA_ERROR", "cudaError", "unspecified launch failure", "misaligned")


def _load(job_dir: Path, job: dict):
    if job["device"] == "cuda":
        _setup_cuda(job.get("arch", ""))
    import tvm

    return tvm, (tvm.cuda(0) if job["device"] == "cuda" else tvm.cpu(0))


def _out_args(tvm, dev, job, inputs):
    outs = [a for a in job["args"] if a[3] == "output"]
    return [tvm.runtime.tensor(a, dev) for a in inputs] + [
        tvm.runtime.tensor(np.full(s, np.nan, d) if np.dtype(d).kind == "f" else np.full(s, -7, d), dev)
        for _, s, d, _ in outs]


def _check_module(tvm, dev, job_dir: Path, job: dict, mod_spec: dict) -> dict:
    try:
        mod = tvm.runtime.load_module(str(job_dir / mod_spec["file"]))
    except Exception as e:  # noqa: BLE001 - load = nvcc compile: a recorded failure
        return {"verdict": "load_error", "error": (str(e).strip().splitlines() or ["?"])[-1][:300]}
    trials, n_in = [], job["n_inputs"]
    for k, trial in enumerate(job["trials"]):
        data = np.load(job_dir / trial["file"])
        inputs = [data[f"in_{i}"] for i in range(n_in)]
        expected = [data[f"out_{i}"] for i in range(len(job["args"]) - n_in)]
        args = _out_args(tvm, dev, job, inputs)
        try:
            mod[job["entry"]](*args)
            dev.sync()
        except Exception as e:  # noqa: BLE001
            msg = (str(e).strip().splitlines() or ["?"])[-1][:300]
            return {"verdict": "crash" if any(f in str(e) for f in _FATAL) else "runtime_error", "error": msg}
        got = [a.numpy() for a in args[n_in:]]
        np.savez(job_dir / f"out_{mod_spec['name']}_{k}.npz", *got)
        counts = [compare(g, e, job["rtol"], job["atol_scale"]) for g, e in zip(got, expected)]
        trials.append({"dist": trial["dist"], "seed": trial.get("seed"), "mismatches": sum(c for c, _ in counts),
                       "max_abs_err": max(m for _, m in counts)})
    ok = all(t["mismatches"] == 0 for t in trials)
    return {"verdict": "correct" if ok else "wrong", "trials": trials}


def check_one(job_dir: Path) -> int:
    """Check the modules without a verdict yet, in order; stop at the first crash (the context is gone)."""
    job = json.loads((job_dir / "job.json").read_text())
    path = job_dir / "check.json"
    verdicts = json.loads(path.read_text()) if path.exists() else {}
    pending = [m for m in job["modules"] if m["name"] not in verdicts]
    if pending:  # the module about to run is marked first: a process that dies in it leaves a crash
        verdicts[pending[0]["name"]] = {"verdict": "crash", "error": "process died while running it"}
        path.write_text(json.dumps(verdicts, indent=1))
    tvm, dev = _load(job_dir, job)
    for m in pending:
        verdicts[m["name"]] = {"verdict": "crash", "error": "process died while running it"}
        path.write_text(json.dumps(verdicts, indent=1))
        verdicts[m["name"]] = _check_module(tvm, dev, job_dir, job, m)
        path.write_text(json.dumps(verdicts, indent=1))
        if verdicts[m["name"]]["verdict"] == "crash":
            return 3
    return 0


def time_one(job_dir: Path) -> int:
    job = json.loads((job_dir / "job.json").read_text())
    verdicts = json.loads((job_dir / "check.json").read_text())
    tvm, dev = _load(job_dir, job)
    data = np.load(job_dir / job["trials"][0]["file"])
    inputs = [data[f"in_{i}"] for i in range(job["n_inputs"])]
    mods = {m["name"]: tvm.runtime.load_module(str(job_dir / m["file"])) for m in job["modules"]
            if verdicts.get(m["name"], {}).get("verdict") == "correct"}
    args = {name: _out_args(tvm, dev, job, inputs) for name in mods}
    samples: dict[str, list[float]] = {name: [] for name in mods}
    rounds, numbers = job["timing"]["rounds"], {}
    for name, mod in mods.items():  # runs per round: enough for ROUND_S, at most the job's number
        one = float(mod.time_evaluator(job["entry"], dev, number=1, repeat=2)(*args[name]).results[-1])
        numbers[name] = max(1, min(int(job["timing"]["number"]), int(ROUND_S / max(one, 1e-7))))
    for _ in range(rounds):
        for name, mod in mods.items():
            timer = mod.time_evaluator(job["entry"], dev, number=numbers[name], repeat=1)
            samples[name].append(float(timer(*args[name]).mean))
    res = {"task": job["task"], "target": job["target"], "device_name": str(getattr(dev, "device_name", "")),
           "modules": {}}
    for m in job["modules"]:
        entry = dict(m, **verdicts.get(m["name"], {"verdict": "unchecked"}))
        if m["name"] in samples:
            entry.update(rounds_s=samples[m["name"]], median_ms=statistics.median(samples[m["name"]]) * 1e3,
                         number=numbers[m["name"]])
        res["modules"][m["name"]] = entry
    (job_dir / "result.json").write_text(json.dumps(res, indent=1))
    return 0


def _child(phase: str, job_dir: Path) -> int:
    return subprocess.run([sys.executable, "-m", "leka.remote.multi", f"--{phase}", str(job_dir)],
                          env=dict(os.environ), timeout=900).returncode


def time_many(dirs: list[Path]) -> int:
    """Time each job in turn in this process, one line per job as it ends (the parent follows them)."""
    for d in dirs:
        t0 = time.monotonic()
        time_one(d)
        print(json.dumps({"dir": str(d), "timed": True, "s": round(time.monotonic() - t0, 2)}), flush=True)
    return 0


def _time_all(dirs: list[Path]) -> int:
    """Phase 2: every job in one process; after a death, the job it died in is failed, the rest go on."""
    todo, failed = list(dirs), 0
    while todo:
        proc = subprocess.run([sys.executable, "-m", "leka.remote.multi", "--time-many", *map(str, todo)],
                              env=dict(os.environ), stdout=subprocess.PIPE, text=True, timeout=3600)
        done = {json.loads(ln)["dir"] for ln in proc.stdout.splitlines() if ln.startswith("{")}
        print(proc.stdout, end="", flush=True)
        todo = [d for d in todo if str(d) not in done]
        if proc.returncode != 0 and todo:
            print(json.dumps({"dir": str(todo[0]), "timed": False}), flush=True)
            todo, failed = todo[1:], failed + 1
    return failed


def _check_until_done(job_dir: Path) -> None:
    n = len(json.loads((job_dir / "job.json").read_text())["modules"])
    for _ in range(n + 1):  # each crash costs one fresh process
        if _child("check-one", job_dir) == 0:
            return


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--jobs", type=int, default=4, help="jobs checked at once (phase 1)")
    ap.add_argument("--check-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--time-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--time-many", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.check_one:
        return check_one(a.dirs[0])
    if a.time_one:
        return time_one(a.dirs[0])
    if a.time_many:
        return time_many(a.dirs)
    os.environ.setdefault("GPU_CUBIN_CACHE", str(CUBIN_CACHE))  # inherited by every child process
    t0 = time.monotonic()
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        list(pool.map(_check_until_done, a.dirs))
    t1 = time.monotonic()
    failed = _time_all(a.dirs)
    t2 = time.monotonic()
    modules = sum(len(json.loads((d / "job.json").read_text())["modules"]) for d in a.dirs)
    print(json.dumps({"round": {"jobs": len(a.dirs), "modules": modules, "check_s": round(t1 - t0, 1),
                                "time_s": round(t2 - t1, 1), "wall_s": round(t2 - t0, 1)}}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
