"""`metaschedule`: TVM's own tuner (MetaSchedule, evolutionary search + XGBoost cost model) on the task's
definition, with exactly as many hardware measurements as the attempt's budget gives: trials =
min(measurements left, compiles left). Its best schedule is then judged by the project's evaluator like
every other method's answer (that judging evaluation is not charged, as LEKA's finalize re-measurement
is not). Charged: one compile and one measurement per trial MetaSchedule ran (read from its database),
and wall time: the tuner runs in its own process (baselines/ms_worker.py), stopped at the budget's
minutes limit, after which the best schedule found so far is read back from its database.

Builder/runner for this 2-core host: LocalBuilder with 2 workers and a 120 s build timeout (TVM's
default 30 s killed every candidate of a 5x5 blur here, as its builds of unrolled stencils take
30-90 s with two builds sharing two cores), LocalRunner with a 60 s timeout and 3 runs per measurement
of at least 50 ms. Options `builder_timeout_s`, `runner_timeout_s`, `trials` (a cap below the budget),
`seed` override these.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from leka.errors import LekaError
from leka.methods import MethodContext, MethodNotApplicable, Sample, register_method
from leka.methods.options import ATTEMPT_BUDGET, attempt_budget, check_options

from .common import as_sample, evaluate_fn

DEFAULTS = {"builder_timeout_s": 120.0, "runner_timeout_s": 60.0, "builder_workers": 2, "seed": 0}
NO_MINUTES_CAP_S = 3600.0  # the tuner's own cap when the budget sets no wall-time limit


def trials_allowed(budget: Any, cap: int | None) -> int:
    """Measurements the budget still allows (a trial costs one compile and one measurement)."""
    left = budget.remaining() if budget is not None else {}
    allowed = [int(v) for v in (left.get("measurements"), left.get("compiles"), cap) if v is not None]
    if not allowed:
        raise LekaError("metaschedule needs a measurement limit: --budget measurements=N (or option trials=N)")
    return max(0, min(allowed))


def _time_left_s(budget: Any) -> float:
    left = (budget.remaining() if budget is not None else {}).get("minutes")
    return NO_MINUTES_CAP_S if left is None else max(1.0, 60.0 * float(left))


def _worker(req: dict[str, Any], folder: Path, timeout_s: float) -> dict[str, Any] | None:
    path = folder / "request.json"
    path.write_text(json.dumps(req))
    (folder / "RESULT.json").unlink(missing_ok=True)
    env = dict(os.environ, TVM_NUM_THREADS=str(req["builder_workers"]))
    # its own session: at the time limit the whole group goes, the tuner's builder/runner pools included
    proc = subprocess.Popen([sys.executable, "-m", "baselines.ms_worker", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).resolve().parents[1],
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    finally:
        if proc.poll() is None:  # interrupted (KeyboardInterrupt): leave no tuner behind
            os.killpg(proc.pid, signal.SIGKILL)
    out = folder / "RESULT.json"
    if proc.returncode != 0 or not out.is_file():
        tail = (stderr or stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise LekaError(f"metaschedule worker failed: {tail[0][:300]}")
    return json.loads(out.read_text())


class MetaScheduleMethod:
    name = "metaschedule"
    is_llm = False

    def __init__(self, options: dict[str, Any]) -> None:
        check_options(self.name, options, (ATTEMPT_BUDGET, "baseline", "trials", *DEFAULTS))
        self.options = dict(options)

    def applies(self, task: Any, target: Any) -> str | None:
        if target.family != "cpu":
            return "metaschedule runs here for CPU targets only (LocalRunner on this host)"
        return None

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        import tvm

        from leka.compiler import default_schedule

        definition = task.build()
        if isinstance(definition, tvm.IRModule) and any(
                isinstance(f, tvm.relax.Function) for _, f in definition.functions_items()):
            raise MethodNotApplicable("metaschedule: L3 graphs (Relax) are not tuned by this baseline")
        budget = attempt_budget(ctx, self.options)
        cap = self.options.get("trials")
        trials = trials_allowed(budget, int(cap) if cap is not None else None)
        if trials < 1 and budget is not None:  # nothing left to tune with: stop as every method does
            budget.charge("measurements")  # raises BudgetExceeded
        naive = default_schedule(definition, target, rules="naive").script()
        req = {**DEFAULTS, **{k: self.options[k] for k in DEFAULTS if k in self.options},
               "module": naive, "target": target.target, "trials": trials}
        with tempfile.TemporaryDirectory(prefix="leka-ms-") as tmp:
            req["work_dir"] = str(Path(tmp) / "work")
            Path(req["work_dir"]).mkdir()
            out = _worker(req, Path(tmp), _time_left_s(budget))
            stopped = out is None
            if out is None:  # wall-time limit: read back what the database holds
                out = _worker({**req, "trials": 0}, Path(tmp), 300.0) or {"trials": 0, "script": None}
        ran = min(int(out["trials"]), trials)
        if budget is not None and ran:  # spent already (by the tuner): recorded, never refused
            budget.settle("compiles", ran)
            budget.settle("measurements", ran)
        meta = {"trials_allowed": trials, "trials_run": int(out["trials"]), "tune_s": out.get("tune_s"),
                "stopped_at_time_limit": stopped, "builder_timeout_s": req["builder_timeout_s"],
                "runner_timeout_s": req["runner_timeout_s"], "judged_uncharged": True}
        source = out.get("script") or naive
        if not out.get("script"):
            meta["schedule"] = "metaschedule found no valid schedule; naive lowering"
        result = dict(evaluate_fn(ctx, task, self.options, holdout=True)(source, bool(ctx.evaluator.config.measure)), source=source)
        return [as_sample(result, self.name, "tvm-metaschedule", budget, meta)]


register_method(MetaScheduleMethod.name, MetaScheduleMethod)
