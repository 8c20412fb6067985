"""Run job folders made by leka.remote.make_job:  python -m leka.remote.run_job DIR [DIR...]

Needs only NumPy and a TVM *runtime* (no compiler library): on a GPU box without TVM, use the bundle
from `leka gpu-bundle` (leka/remote/bundle.py, docs/cuda.md). For each job: load candidate and baseline, run every
trial with NaN-prefilled outputs, compare with the NumPy reference (|got-exp| <= atol + rtol*|exp|,
atol = atol_scale * max|exp|), then time candidate and baseline alternately. Prints one JSON line per job
and writes DIR/result.json. Exit status 0 when every job ran (whatever its verdict), 1 otherwise.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _setup_cuda(arch: str) -> None:
    """On a runtime-only TVM, register the nvcc compile callback (bundle's gpu_runtime)."""
    if arch:
        os.environ.setdefault("GPU_ARCH", arch)
    try:
        import gpu_runtime  # noqa: F401 - side effect: loads libtvm_runtime_cuda, registers nvcc callback
    except ImportError:
        pass  # full TVM (or a runtime with its own callback)


def compare(got: np.ndarray, exp: np.ndarray, rtol: float, atol_scale: float) -> tuple[int, float]:
    """(number of mismatching elements, max abs error); NaN where the reference is finite mismatches."""
    if got.shape != exp.shape:
        return int(exp.size), float("inf")
    if exp.dtype.kind in "iub":
        err = np.abs(got.astype(np.int64) - exp.astype(np.int64))
        return int((err > atol_scale + rtol * np.abs(exp.astype(np.int64))).sum()), float(err.max(initial=0))
    g, e = got.astype(np.float64), exp.astype(np.float64)
    finite = np.isfinite(e)
    atol = atol_scale * (float(np.abs(e[finite]).max()) if finite.any() else 1.0)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - e)
        bad = ~(err <= atol + rtol * np.abs(e))
    bad &= ~(~finite & ((np.isnan(e) & np.isnan(g)) | (g == e)))
    finite_err = err[np.isfinite(err)]
    max_err = float(finite_err.max()) if finite_err.size == err.size and err.size else float("inf")
    return int(bad.sum()), max_err


def run_one(job_dir: Path) -> dict:
    job = json.loads((job_dir / "job.json").read_text())
    res: dict = {"task": job["task"], "target": job["target"], "dir": str(job_dir), "ran": False}
    if job["device"] == "cuda":
        _setup_cuda(job.get("arch", ""))  # before `import tvm`: the bundle selects the runtime-only library
    import tvm

    dev = tvm.cuda(0) if job["device"] == "cuda" else tvm.cpu(0)
    if not dev.exist:
        res["error"] = f"no {job['device']} device here"
        return res
    t0 = time.perf_counter()
    mods = _load_modules(job_dir, job, res)
    if mods is None:
        return res
    res["load_s"] = round(time.perf_counter() - t0, 3)
    verdict, args_by_role = _check_trials(job_dir, job, mods, dev)
    for role in mods:
        v = verdict[role]
        res[f"{role}_correct"] = bool(v) and all(t.get("mismatches") == 0 for t in v)
        res[f"{role}_trials"] = v
    res["correct"] = res["candidate_correct"]
    if len(args_by_role) == 2:
        res.update(_time(job, mods, args_by_role, dev))
    res["ran"] = True
    res["device_name"] = _device_name(dev, job["device"])
    return res


def _load_modules(job_dir: Path, job: dict, res: dict) -> dict | None:
    """Candidate and baseline modules; None (with res["error"]) when one fails to load."""
    import tvm

    mods = {}
    for role in ("candidate", "baseline"):
        try:
            mods[role] = tvm.runtime.load_module(str(job_dir / job[role]["file"]))
        except Exception as e:  # noqa: BLE001 - load = nvcc compile for CUDA: report, don't crash
            res["error"] = f"{role} load failed: {str(e).strip().splitlines()[-1] if str(e).strip() else e}"
            return None
    return mods


def _check_trials(job_dir: Path, job: dict, mods: dict, dev) -> tuple[dict, dict]:
    """Per role, each trial's verdict (mismatches or the error), and the arguments of its last good run."""
    import tvm

    n_in = job["n_inputs"]
    outs_spec = [a for a in job["args"] if a[3] == "output"]
    verdict: dict = {"candidate": [], "baseline": []}
    args_by_role: dict = {}
    for trial in job["trials"]:
        data = np.load(job_dir / trial["file"])
        inputs = [data[f"in_{i}"] for i in range(n_in)]
        expected = [data[f"out_{i}"] for i in range(len(outs_spec))]
        for role, mod in mods.items():
            args = [tvm.runtime.tensor(a, dev) for a in inputs]
            args += [tvm.runtime.tensor(np.full(s, np.nan, d) if np.dtype(d).kind == "f" else
                                        np.full(s, -7, d), dev) for _, s, d, _ in outs_spec]
            try:
                mod[job["entry"]](*args)
                dev.sync()
            except Exception as e:  # noqa: BLE001
                verdict[role].append({"dist": trial["dist"], "error": str(e).strip().splitlines()[-1][:300]})
                continue
            got = [a.numpy() for a in args[n_in:]]
            counts = [compare(g, e, job["rtol"], job["atol_scale"]) for g, e in zip(got, expected)]
            verdict[role].append({"dist": trial["dist"], "mismatches": sum(c for c, _ in counts),
                                  "max_abs_err": max(m for _, m in counts)})
            args_by_role[role] = args
    return verdict, args_by_role


def _time(job: dict, mods: dict, args_by_role: dict, dev) -> dict:
    """Candidate and baseline timed alternately, so drift (clocks, other load) hits both alike."""
    number, rounds = job["timing"]["number"], job["timing"]["rounds"]
    samples: dict = {"candidate": [], "baseline": []}
    for _ in range(rounds):
        for role in ("candidate", "baseline"):
            timer = mods[role].time_evaluator(job["entry"], dev, number=number, repeat=1)
            samples[role].append(float(timer(*args_by_role[role]).mean))
    cand_ms = statistics.median(samples["candidate"]) * 1e3
    base_ms = statistics.median(samples["baseline"]) * 1e3
    return dict(candidate_ms=round(cand_ms, 5), baseline_ms=round(base_ms, 5), baseline=job["baseline"]["name"],
                speedup=round(base_ms / cand_ms, 3) if cand_ms > 0 else None,
                spread=round((max(samples["candidate"]) - min(samples["candidate"])) * 1e3 / cand_ms, 4),
                gflops=round(job["flops"] / (cand_ms * 1e-3) / 1e9, 2) if job.get("flops") else None)


def _device_name(dev, kind: str) -> str:
    try:
        return str(dev.device_name) if kind == "cuda" else "cpu"
    except Exception:  # noqa: BLE001
        return kind


def main(argv: list[str] | None = None) -> int:
    dirs = [Path(d) for d in (sys.argv[1:] if argv is None else argv)]
    if not dirs:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    failed = 0
    for d in dirs:
        if not (d / "job.json").exists():
            print(json.dumps({"dir": str(d), "ran": False, "error": "no job.json"}))
            failed += 1
            continue
        try:
            res = run_one(d)
        except Exception as e:  # noqa: BLE001 - one bad job must not stop the others
            res = {"dir": str(d), "ran": False, "error": f"{type(e).__name__}: {e}"[:400]}
        (d / "result.json").write_text(json.dumps(res, indent=1))
        print(json.dumps(res), flush=True)
        failed += not res.get("ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
