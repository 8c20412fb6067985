"""Write a job folder (full TVM needed: this side compiles)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from leka.errors import CandidateFormatError, LekaError
from leka.evaluator.config import EvalConfig
from leka.evaluator.inputs import make_trials
from leka.tasks.task import Task
from leka.targets import get_target

if TYPE_CHECKING:
    from leka.compiler import Artifact

BASELINES = ("tvm-naive", "tvm-dlight")
MIN_TRIALS = 2  # correctness trials per module on the remote GPU: one input set can hide a race or a bad index


def parse_candidate(source: str):
    """TVMScript text -> IRModule/PrimFunc, with a one-line error for anything else. The text is outside
    input: the TVMScript allow-list, the builtin-free parser and the IR call policy apply, as in the
    evaluation worker (docs/evaluator.md, "Parsing and IR policy")."""
    from leka.evaluator.ir_policy import IRPolicyViolation, check_ir
    from leka.evaluator.safe_parse import safe_from_source
    from leka.evaluator.script_guard import ScriptRejected

    try:
        parsed = safe_from_source(source)
        check_ir(parsed)
    except (ScriptRejected, IRPolicyViolation) as e:
        raise CandidateFormatError(f"candidate is not accepted TVMScript: {e}") from None
    return parsed


def check_signature(task: Task, params: list[tuple[str, tuple[int, ...], str]]) -> None:
    want = [(tuple(a.shape), a.dtype) for a in task.args]
    got = [(tuple(s), d) for _, s, d in params]
    if want != got:
        raise CandidateFormatError(
            f"candidate signature {[f'{d}{list(s)}' for s, d in got]} does not match task {task.id} "
            f"{[f'{d}{list(s)}' for s, d in want]}")


def make_job(task: Task, candidate_source: str, target, out: Path, *, trials: int, seed: int, baseline: str,
             number: int, rounds: int) -> Path:
    from leka.compiler import build, default_schedule

    preset = get_target(target)
    if baseline not in BASELINES:
        raise LekaError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
    out.mkdir(parents=True, exist_ok=True)
    cand = build(parse_candidate(candidate_source), preset)
    check_signature(task, cand.params)
    base_mod = default_schedule(task.build(), preset, "dlight" if baseline == "tvm-dlight" else "naive")
    if base_mod is None:  # dlight does not apply: falls back to naive
        base_mod, baseline = default_schedule(task.build(), preset, "naive"), "tvm-naive"
    base = build(base_mod, preset)
    cand_path, base_path = cand.export(out / "candidate.so"), base.export(out / "baseline.so")

    job = _job_header(task, preset, out, trials, seed)
    job.update({
        "candidate": {"file": cand_path.name, "source_sha256": hashlib.sha256(candidate_source.encode()).hexdigest(),
                      "kernels": cand.to_json()["kernels"], "compile_s": round(cand.compile_s, 4)},
        "baseline": {"name": baseline, "file": base_path.name, "kernels": base.to_json()["kernels"]},
        "timing": {"number": number, "rounds": rounds}})
    (out / "job.json").write_text(json.dumps(job, indent=1))
    return out


def _job_header(task: Task, preset, out: Path, trials: int, seed: int) -> dict:
    """Trials (inputs + NumPy reference outputs, computed here) and the task's facts for job.json."""
    device = {"cuda": "cuda", "cpu": "cpu"}.get(preset.family)
    if device is None:
        raise LekaError(f"remote jobs support cuda and cpu targets, not {preset.family}")
    # the local evaluator's trials: its distributions in its order, each trial from its own seed stream
    made = make_trials(task, EvalConfig(trials=trials, seed=seed), seed, holdout=False, measure=False)
    trial_files = []
    for k, trial in enumerate(made.trials):
        name = f"trial_{k}.npz"
        arrays: dict[str, Any] = {f"in_{i}": a for i, a in enumerate(trial.inputs)}
        arrays.update({f"out_{i}": a for i, a in enumerate(trial.refs)})
        np.savez(out / name, **arrays)
        trial_files.append({"file": name, "dist": trial.label, "seed": [seed, 0, k]})
    rtol, atol_scale = task.tolerance()
    return {"version": 1, "task": task.id, "target": preset.name, "target_dict": preset.target, "device": device,
            "arch": str(preset.target.get("arch", "")), "entry": "main",
            "args": [[a.name, list(a.shape), a.dtype, a.role] for a in task.args],
            "n_inputs": len(task.inputs), "rtol": rtol, "atol_scale": atol_scale, "trials": trial_files,
            "flops": task.flops, "bytes": task.bytes, "seed": seed}


def make_multi_job(task: Task, modules: Sequence[tuple[str, Artifact, dict]], target, out: Path, *, trials: int = 2,
                   seed: int = 0, number: int = 100, rounds: int = 7, job_id: str = "") -> Path:
    """A job folder for leka.remote.multi: every (name, built Artifact, meta) module of one task, each checked
    on `trials` (>= MIN_TRIALS) inputs of different distributions and seeds. job_id names this side's record
    of it (leka.remote.judge)."""
    if trials < MIN_TRIALS:
        raise LekaError(f"a multi-module job checks each module on at least {MIN_TRIALS} trials, not {trials}")
    preset = get_target(target)
    out.mkdir(parents=True, exist_ok=True)
    job = _job_header(task, preset, out, trials, seed)
    job["version"] = 2
    job["job_id"] = job_id or out.name
    job["modules"] = []
    for name, art, meta in modules:
        path = art.export(out / f"{name}.so")
        job["modules"].append(dict(meta, name=name, file=path.name, kernels=art.to_json()["kernels"]))
    job["timing"] = {"number": number, "rounds": rounds}
    (out / "job.json").write_text(json.dumps(job, indent=1))
    return out
