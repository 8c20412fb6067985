"""`onnxruntime`: the task's ONNX form run by ONNX Runtime's CPU execution provider (2 intra-op threads,
the cores of this box), as the runtime a user would pick instead of writing kernels.

ONNX Runtime is trusted code and runs in this process. Correctness is checked against the task's
reference on the evaluator's trial inputs; timing uses the evaluator's round protocol (warm-up, rounds
of >= min_run_ms until both min_rounds and min_time_s are met) and the tvm-naive baseline time comes
from the evaluator's worker, so the two sides are not interleaved (recorded in detail.timing_note).
"""
from __future__ import annotations

import hashlib
import math
import time
from typing import Any

import numpy as np

from .base import MethodContext, MethodNotApplicable, Sample, register_method

ORT_THREADS = 2


class OnnxRuntimeMethod:
    name = "onnxruntime"
    is_llm = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.threads = int(options.get("ort_threads", ORT_THREADS))

    def applies(self, task: Any, target: Any) -> str | None:
        if task.onnx_model is None:
            return "task has no ONNX form"
        if target.family != "cpu" or not target.runnable:
            return "onnxruntime runs on this machine's CPU only"
        return None

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        import onnxruntime as ort

        from leka.compiler import default_schedule
        from leka.evaluator import versions
        from leka.evaluator.correctness import check_outputs
        from leka.evaluator.timing import summarize

        why = self.applies(task, target)
        if why:
            raise MethodNotApplicable(f"{self.name} on {task.id}: {why}")
        model_bytes = task.onnx_model().SerializeToString()
        chash = hashlib.sha256(model_bytes).hexdigest()[:16]
        rec: dict[str, Any] = {"task": task.id, "target": target.name, "candidate_hash": chash, "baseline": "tvm-naive",
                               "compiled": False, "correct": None, "failure": None, "error": None, "status": "pending",
                               "versions": {**versions(), "onnxruntime": ort.__version__}, "mismatches": [],
                               "speedup": None, "candidate_ms": None, "baseline_ms": None, "spread": None,
                               "detail": {"ort_threads": self.threads}}
        t0 = time.perf_counter()
        try:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.log_severity_level = 3
            sess = ort.InferenceSession(model_bytes, sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - ORT rejects the model: a compile error of this method
            rec.update(failure="compile_error", error=str(e).splitlines()[0], status="compile_error")
            return [self._sample(rec, ctx)]
        rec.update(compiled=True, compile_s=time.perf_counter() - t0)
        names = [i.name for i in sess.get_inputs()]
        trials = ctx.evaluator.make_trials(task, holdout=True)  # a final answer: judged on held-back inputs too
        rec["input_seed"], rec["holdout"] = trials.seed, True
        for t, trial in enumerate(trials.trials):
            outs = [np.asarray(o) for o in sess.run(None, dict(zip(names, trial.inputs)))]
            outs = [o.reshape(r.shape) if o.size == r.size else o for o, r in zip(outs, trial.refs)] + \
                outs[len(trial.refs):]
            v = check_outputs(task, outs, trial.refs, trial.ties)
            if not v.ok:
                why = v.summary if trial.held_back else v.reason
                rec.update(correct=False, failure="wrong", error=f"trial {t} ({trial.label} inputs): {why}",
                           status="wrong", mismatch_count=v.mismatch_count)
                return [self._sample(rec, ctx)]
        rec["correct"] = True
        if ctx.evaluator.config.measure:
            if ctx.budget is not None:
                ctx.budget.charge("measurements")
            feed = dict(zip(names, trials.trials[0].inputs))
            ort_s = _time_rounds(lambda: sess.run(None, feed), ctx.evaluator.config)
            s = summarize(ort_s)
            rec.update(candidate_ms=s["median_s"] * 1e3, spread=s["iqr_rel"], rounds=s["n"])
            base = self._baseline(task, target, ctx, default_schedule)
            rec["baseline_ms"], rec["baseline_spread"] = base.get("baseline_ms"), base.get("baseline_spread")
            if rec["baseline_ms"]:
                rec["speedup"] = rec["baseline_ms"] / rec["candidate_ms"]
            else:
                rec["detail"]["baseline_error"] = base.get("error") or "baseline not timed"
            rec["detail"]["timing"] = {"candidate": s}
            rec["detail"]["timing_note"] = "onnxruntime timed in-process; tvm-naive in the evaluator worker"
        rec["status"] = "ok"
        return [self._sample(rec, ctx)]

    def _baseline(self, task, target, ctx: MethodContext, default_schedule) -> dict[str, Any]:
        """The tvm-naive time, measured by the evaluator (its candidate is the naive lowering itself)."""
        if ctx.budget is not None:
            ctx.budget.charge("compiles")
        src = default_schedule(task.build(), target, rules="naive").script()
        return ctx.evaluator.evaluate(task, src, baseline="tvm-naive").to_json()

    def _sample(self, rec: dict[str, Any], ctx: MethodContext) -> Sample:
        return Sample(result=rec, method=self.name, candidate_hash=rec["candidate_hash"],
                      budget_spent=ctx.budget.spent() if ctx.budget is not None else {},
                      meta={"runtime": "onnxruntime", "provider": "CPUExecutionProvider"})


def _time_rounds(fn, cfg) -> list[float]:
    """Seconds per run, one value per round (same knobs as the evaluator's protocol)."""
    for _ in range(cfg.warmup):
        fn()
    t = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t, 1e-7)
    number = max(1, min(10_000, math.ceil(cfg.min_run_ms / 1e3 / one)))
    out: list[float] = []
    spent = 0.0
    while len(out) < cfg.max_rounds:
        t = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t
        out.append(dt / number)
        spent += dt
        if len(out) >= cfg.min_rounds and spent >= cfg.min_time_s:
            break
    return out


register_method(OnnxRuntimeMethod.name, OnnxRuntimeMethod)
