"""Remote results are judged here: the folder that comes back from a remote host is input, not a verdict.

At `batch`, each job's record stays on this side (the pending store): the sha256 of every trial file (its
inputs and NumPy references), the tolerances, the output shapes and dtypes, the modules it asked for (name ->
pending key) and the timing it asked (rounds, runs per round), and the task's per-run floor on the target
(leka.evaluator.floor). At `ingest` a module is correct only when this side re-checked its returned outputs
on every trial against those references (a trial file that changed, an output file missing or of another
shape: not verified, never correct), and timed only when its rounds pass the checks local timing makes of a
worker's reply: as many rounds as asked, at most the runs asked per round, every time finite and positive,
the median above the floor; median and spread are computed here from the rounds (the remote's own median is
not read). The remote host reports no CPU time or wall clock this side could hold its times against, so
what local timing checks with those (leka.evaluator.timing.plausible) has no counterpart here. A module this
side did not ask for is not stored."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from leka.errors import LekaError
from leka.outside_files import sha256_file

BASE = "baseline"
_FAILURE = {"wrong": "wrong", "crash": "crash", "load_error": "compile_error", "runtime_error": "runtime_error"}


def job_record(job_dir: Path, floor_s: float, floor_how: str) -> dict[str, Any]:
    """What this side keeps of a job it just wrote (job.json is read back at once, before it leaves)."""
    job = json.loads((job_dir / "job.json").read_text())
    n_in = job["n_inputs"]
    return {"job_id": job["job_id"], "task": job["task"], "target": job["target"], "rtol": job["rtol"],
            "atol_scale": job["atol_scale"], "outputs": [[s, d] for _, s, d, _ in job["args"][n_in:]],
            "trials": [{"file": t["file"], "sha256": sha256_file(job_dir / t["file"])} for t in job["trials"]],
            "modules": {m["name"]: m.get("key") for m in job["modules"]}, "timing": job["timing"],
            "floor_s": floor_s, "floor_how": floor_how}


def modules_of(res: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    mods = res.get("modules")
    if not isinstance(mods, dict) or not all(isinstance(m, dict) for m in mods.values()):
        raise LekaError(f"{path}: malformed result.json ('modules' is not an object of module objects)")
    return mods


def references(job_dir: Path, rec: dict[str, Any]) -> list[dict[str, np.ndarray]] | str:
    """The references of every trial, read once per job from files whose sha256 is the one this side kept, or
    why they cannot be used."""
    from leka.outside_files import load_npz

    refs = []
    for trial in rec["trials"]:
        path = job_dir / trial["file"]
        if not path.is_file() or sha256_file(path) != trial["sha256"]:
            return f"not verified here: trial file {trial['file']} is not the one this side wrote"
        refs.append(load_npz(path))
    return refs


def recheck(job_dir: Path, rec: dict[str, Any], name: str, refs: list[dict[str, np.ndarray]] | str) -> str | None:
    """None when the outputs `name` sent back match this side's references on every trial, else why not."""
    from leka.outside_files import load_npz

    from .run_job import compare

    if isinstance(refs, str):
        return refs
    limit = sum(math.prod(s) * np.dtype(d).itemsize for s, d in rec["outputs"])  # exactly what was asked
    for k, ref in enumerate(refs):
        out_path = job_dir / f"out_{name}_{k}.npz"
        if not out_path.is_file():
            return f"not verified here: no outputs came back for trial {k} ({out_path.name})"
        try:
            got = load_npz(out_path, limit_bytes=limit)
        except LekaError as e:
            return f"not verified here: {e}"
        for i, (shape, dtype) in enumerate(rec["outputs"]):
            g = got.get(f"arr_{i}")
            if g is None or tuple(g.shape) != tuple(shape) or str(g.dtype) != dtype:
                return f"not verified here: trial {k} output {i} is not {dtype}{list(shape)}"
            bad, _ = compare(g, ref[f"out_{i}"], rec["rtol"], rec["atol_scale"])
            if bad:
                return f"wrong: {bad} mismatches of output {i} on trial {k}, re-checked on the build host"
    return None


def timing(m: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any] | str:
    """The module's timing summary computed here from its rounds, or why the rounds are not believed."""
    from leka.evaluator.timing import summarize

    rounds, number = m.get("rounds_s"), m.get("number")
    want_rounds, max_number = int(rec["timing"]["rounds"]), int(rec["timing"]["number"])
    if not isinstance(rounds, list) or len(rounds) != want_rounds:
        return f"remote timing: {len(rounds) if isinstance(rounds, list) else 'no'} rounds, {want_rounds} asked"
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0
               for t in rounds):
        return "remote timing: a round's time is not a finite positive number"
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= max_number:
        return f"remote timing: {number!r} runs per round, at most {max_number} asked"
    s = summarize(rounds)
    if s["median_s"] < rec["floor_s"]:
        return (f"remote timing below the task's floor: runs of {s['median_s'] * 1e9:.3g} ns reported; "
                f"{rec['floor_how']}")
    return s


def judge(job_dir: Path, rec: dict[str, Any], mods: dict[str, dict[str, Any]], name: str, meta: dict[str, Any],
          refs: list[dict[str, np.ndarray]] | str, base: dict[str, Any] | str | None) -> dict[str, Any]:
    """The result of module `name` (asked by this side) as the evaluator's result shape; refs: the job's
    references (`references`); `base`: the baseline's timing summary, or why it has none (baseline_timing)."""
    m = mods[name]
    verdict = m.get("verdict")
    err = m.get("error")
    out: dict[str, Any] = {"compiled": verdict != "load_error", "correct": False,
                           "failure": _FAILURE.get(str(verdict), "wrong") if verdict != "correct" else None,
                           "error": str(err)[:300] if err is not None else None, "remote": meta,
                           "trials": m.get("trials") if isinstance(m.get("trials"), list) else None}
    if verdict != "correct":
        if verdict not in _FAILURE:
            out["error"] = f"not verified here: remote verdict {str(verdict)[:40]!r}"
        return out
    why = recheck(job_dir, rec, name, refs)
    if why:
        return dict(out, failure="wrong", error=why)
    cand = timing(m, rec)
    if isinstance(cand, str):
        return dict(out, failure="wrong", error=cand)
    out.update(correct=True, failure=None, error=None)
    if isinstance(base, dict):
        c_ms, b_ms = cand["median_s"] * 1e3, base["median_s"] * 1e3
        b = mods[BASE]
        out.update(candidate_ms=c_ms, baseline_ms=b_ms, speedup=b_ms / c_ms, baseline=b.get("method"),
                   rounds=len(m["rounds_s"]), spread=cand["iqr_rel"], baseline_spread=base["iqr_rel"],
                   detail={"timing": {"candidate": {"rounds_s": m["rounds_s"], "min_s": cand["min_s"]},
                                      "baseline": {"rounds_s": b["rounds_s"], "min_s": base["min_s"]}}})
    elif base:
        out["error"] = f"correct; not timed: the baseline's {base}"
    return out


def baseline_timing(job_dir: Path, rec: dict[str, Any], mods: dict[str, dict[str, Any]],
                    refs: list[dict[str, np.ndarray]] | str) -> dict[str, Any] | str:
    """The baseline's timing summary when it too is verified here, else why there is none."""
    b = mods.get(BASE)
    if b is None or b.get("verdict") != "correct":
        return "result is missing or not correct"
    why = recheck(job_dir, rec, BASE, refs)
    return why or timing(b, rec)
