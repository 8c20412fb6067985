"""Build here, run on a GPU box: job folders that need only NumPy and a runtime-only TVM to execute.

    from leka.remote import make_job
    make_job(task, candidate_source, "cuda", "jobs/ex-matmul-256")   # here (full TVM)
    python -m leka.remote.run_job jobs/*                              # there (numpy + TVM runtime)

A job folder holds candidate.so and baseline.so (exported modules; CUDA source JIT-compiled at load),
trial_K.npz (inputs and NumPy reference outputs) and job.json. See docs/cuda.md.
This package's __init__ stays import-light: run_job must import with no TVM compiler present.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["make_job", "JOB_VERSION"]

JOB_VERSION = 1


def make_job(task, candidate_source: str, target, dir: str | Path, *, trials: int = 3, seed: int = 0,
             baseline: str = "tvm-naive", number: int = 50, rounds: int = 5) -> Path:
    """Build `candidate_source` (TVMScript) and the baseline for `target` and write a job folder."""
    from .job import make_job as _make_job

    return _make_job(task, candidate_source, target, Path(dir), trials=trials, seed=seed, baseline=baseline,
                     number=number, rounds=rounds)


def read_result(dir: str | Path) -> dict[str, Any]:
    import json

    return json.loads((Path(dir) / "result.json").read_text())
