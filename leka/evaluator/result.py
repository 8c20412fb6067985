"""EvalResult: what the evaluator says about one candidate, as a JSON-ready record."""
from __future__ import annotations

import hashlib
import platform
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any


@dataclass
class Mismatch:
    output: str
    index: list[int]
    got: float | int | None
    expected: float | int | None


@dataclass
class EvalResult:
    task: str
    target: str
    candidate_hash: str
    baseline: str
    # The seed every input of this evaluation was drawn from: EvalConfig(seed=input_seed) / `leka eval --seed`
    # replays them (with the same trials, distributions and holdout setting).
    input_seed: int | None = None
    holdout: bool = False  # judged on the held-back input families too
    compiled: bool = False
    correct: bool | None = None  # None: not checked (build-only target, or failed before running)
    failure: str | None = None  # one of config.FAILURES, or None
    error: str | None = None
    stage: str | None = None  # where it stopped: parse/signature/build/run/check/timing
    status: str = "pending"  # "ok" | failure kind | "build_only"
    speedup: float | None = None  # baseline median / candidate median
    candidate_ms: float | None = None  # median per run
    baseline_ms: float | None = None
    spread: float | None = None  # candidate IQR / median
    baseline_spread: float | None = None
    rounds: int = 0
    trials: int = 0
    trials_passed: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    max_abs_err: float | None = None
    compile_s: float | None = None
    binary_bytes: int | None = None
    source_kind: str | None = None
    eval_s: float | None = None  # wall time of the whole evaluation
    overhead_s: float | None = None  # eval_s minus worker compile time
    versions: dict[str, str] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)

    def fail(self, kind: str, error: str, stage: str) -> "EvalResult":
        self.failure, self.error, self.stage, self.status = kind, error, stage, kind
        if kind in ("wrong",):
            self.correct = False
        return self

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["mismatches"] = [asdict(m) if not isinstance(m, dict) else m for m in self.mismatches]
        return d


def candidate_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    import numpy
    import tvm
    from tvm.target import codegen

    import leka

    try:
        llvm = str(codegen.llvm_version_major())
    except Exception:  # a TVM built without LLVM
        llvm = "none"
    return {"tvm": tvm.__version__, "llvm": llvm, "leka": leka.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "code": code_version()}


def code_version() -> str:
    """The source tree's git commit ("+dirty" with uncommitted changes to tracked files), or "unknown"
    outside a checkout: results of different code are never mixed in one run (bench/runner.py)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
