"""Evaluator: the honest judge. Inputs and reference outputs are made here; the candidate is built,
run and timed in a worker process; correctness is decided here.

Protocol per candidate: draw a fresh input seed (inputs.py; references computed on a helper thread while
the worker compiles) -> load (parse, signature check, build) -> run N trials from several distributions
(plus the held-back families when judging), outputs pre-filled with NaN/garbage -> compare with the
reference (exactly the task's outputs, shapes and dtypes), inputs unchanged -> time candidate and baseline
alternately in the same worker on the timing loop's own inputs -> check the outputs left by the timing loop
against the reference of those inputs. speedup = baseline median / candidate median.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from leka.targets import TargetPreset, get_target
from leka.tasks.task import Task

from .calibrate import SideRounds, size_rounds, slow_pair, time_running
from .cpu_time import own_wait_s
from .config import EvalConfig
from .correctness import Verdict, check_outputs, check_timed_runs, inputs_unchanged
from .floor import run_floor
from .inputs import InputSource, Trial, TrialSet
from .pool import Worker, WorkerFault, WorkerLike
from .result import EvalResult, candidate_hash, versions
from .timing import plausible, summarize

BASELINES = ("tvm-naive", "tvm-dlight")


class Evaluator:
    """Evaluates candidates for one target. Use as a context manager; reuses one worker until it faults."""

    def __init__(self, target: TargetPreset | str | dict, config: EvalConfig | None = None):
        self.target = get_target(target)
        self.config = config or EvalConfig()
        self.threads = self._threads()
        self.worker: WorkerLike = Worker(self.config.mem_limit_gb, self.threads)
        self._baselines: dict[tuple[str, str], tuple[str, str]] = {}  # (task, name) -> (label, source)
        self.inputs = InputSource(self.config)

    def _threads(self) -> int | None:
        """Thread pool size for CPU targets: the config's, else the user's TVM_NUM_THREADS, else the
        target's core count (TVM's own default halves the cores on x86)."""
        if self.config.threads:
            return self.config.threads
        env = os.environ.get("TVM_NUM_THREADS", "")
        if env.isdigit() and int(env) > 0:
            return int(env)
        if self.target.family != "cpu":
            return None
        cores = (self.target.facts or {}).get("cores") or self.target.target.get("num-cores")
        return int(cores) if cores else None

    def __enter__(self) -> "Evaluator":
        self.worker.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.worker.close()
        self.inputs.close()

    def make_trials(self, task: Task, *, holdout: bool | None = None, measure: bool = False) -> TrialSet:
        """A fresh TrialSet (its seed in .seed) for trusted code that checks outputs in this process, such as
        the onnxruntime method; candidates are judged by evaluate()."""
        _seed, made = self.inputs.start(task, self.config.holdout if holdout is None else holdout, measure)
        return made.result()

    def baseline_source(self, task: Task, name: str) -> tuple[str, str]:
        """(label, TVMScript) of a named baseline for this task and target."""
        key = (task.id, name)
        if key not in self._baselines:
            from leka.compiler import baseline_module

            if name not in BASELINES:
                from leka.errors import LekaError

                raise LekaError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
            label, mod = baseline_module(task.build(), self.target, name)
            self._baselines[key] = (label, mod.script())
        return self._baselines[key]

    # -- the protocol ------------------------------------------------------------------------------
    def evaluate(self, task: Task, source: str, baseline: str = "tvm-naive", *,
                 measure: bool | None = None, holdout: bool | None = None) -> EvalResult:
        """Judge one candidate. `holdout` (default: the config's) adds the held-back input families: set it
        when the result is final, never for feedback that a search acts on."""
        t_start = time.perf_counter()
        cfg = self.config
        measure = cfg.measure if measure is None else measure
        holdout = cfg.holdout if holdout is None else holdout
        chash = candidate_hash(source)
        seed, made = self.inputs.start(task, holdout, measure)
        res = EvalResult(task=task.id, target=self.target.name, candidate_hash=chash, baseline=baseline,
                         versions=versions(), input_seed=seed, holdout=holdout)
        res.detail["sandbox"] = self.worker.isolation
        args = [(a.name, tuple(a.shape), a.dtype, a.role) for a in task.args]
        target_json = self.target.target if self.target.name == "custom" else self.target.name
        compile_s = 0.0
        try:
            info = self._ask({"op": "load", "key": chash, "source": source, "args": args, "target": target_json},
                             cfg.compile_timeout_s, res, "build")
            if info is None:
                return self._done(res, t_start, compile_s)
            res.compiled = True
            compile_s = res.compile_s = info.get("compile_s")
            res.binary_bytes, res.source_kind = info.get("binary_bytes"), info.get("source_kind")
            if info.get("build_only"):
                res.status = "build_only"
                res.error = self.target.why_not_runnable
                return self._done(res, t_start, compile_s)
            t_wait = time.perf_counter()
            trials = made.result()  # usually ready: made while the worker compiled
            res.detail["inputs_wait_s"] = time.perf_counter() - t_wait
            if not self._check(task, chash, args, res, trials):
                return self._done(res, t_start, compile_s)
            if measure:
                assert trials.timing is not None  # a measuring evaluation's set has timing inputs
                self._measure(task, chash, args, baseline, res, trials.timing)
                if res.failure is None:
                    res.status = "ok"
            else:
                res.status = "ok"
        finally:
            self._ask({"op": "drop", "key": chash}, 10, None, "drop") if self.worker.alive else None
            strays = self.worker.sweep()  # nothing a candidate started outlives its evaluation
            if strays:
                res.detail["strays_killed"] = strays
            self.inputs.prefetch(task, holdout, measure)
        return self._done(res, t_start, compile_s)

    def _ask(self, req: dict[str, Any], timeout: float, res: EvalResult | None, stage: str):
        try:
            reply = self.worker.request(req, timeout)
        except WorkerFault as f:
            if res is not None:
                res.fail(f.kind, f.message, stage)
            return None
        if not reply.get("ok"):
            if res is not None:
                res.fail(reply.get("kind", "runtime_error"), reply.get("error", "?"), reply.get("stage", stage))
            return None
        return reply

    def _check(self, task: Task, key: str, args: list, res: EvalResult, ts: TrialSet) -> bool:
        fills = ["nan" if i % 2 == 0 else "garbage" for i in range(len(ts.trials))]
        reply = self._ask({"op": "run", "key": key, "args": args, "trials": [t.inputs for t in ts.trials],
                           "fills": fills, "seed": ts.fill_seed}, self.config.run_timeout_s, res, "run")
        if reply is None:
            return False
        res.trials = len(ts.trials)
        got = reply.get("trials")
        if not isinstance(got, list) or len(got) != len(ts.trials):
            res.fail("runtime_error", "the worker returned a different number of trials", "run")
            return False
        in_names = [a.name for a in task.inputs]
        for t, (trial, out) in enumerate(zip(ts.trials, got, strict=True)):
            where = f"trial {t} ({trial.label} inputs)"
            changed = inputs_unchanged(trial.inputs, list(out.get("inputs_after") or []), in_names)
            if changed:
                res.fail("wrong", f"{where}: {changed}", "check")
                return False
            v = check_outputs(task, list(out.get("outputs") or []), trial.refs, trial.ties, self.config.max_mismatches)
            res.max_abs_err = max(res.max_abs_err or 0.0, v.max_abs_err)
            if not v.ok:
                self._wrong(res, v, where, trial, "check")
                return False
            res.trials_passed += 1
        res.correct = True
        return True

    @staticmethod
    def _wrong(res: EvalResult, v: Verdict, where: str, trial: Trial, stage: str) -> None:
        """Record a mismatch; on held-back inputs only counts, never indices or values, reach the record."""
        if trial.held_back:
            res.mismatch_count = v.mismatch_count
            res.fail("wrong", f"{where}: {v.summary}", stage)
            return
        res.mismatches, res.mismatch_count = v.mismatches, v.mismatch_count
        res.fail("wrong", f"{where}: {v.reason}", stage)

    def _measure(self, task: Task, key: str, args: list, baseline: str, res: EvalResult, trial: Trial) -> None:
        label, bsrc = self.baseline_source(task, baseline)
        res.baseline = label
        bkey = "baseline:" + candidate_hash(bsrc)
        if self._ask({"op": "load", "key": bkey, "source": bsrc, "args": args, "target": self.target.name},
                     self.config.compile_timeout_s, None, "baseline") is None:
            res.detail["baseline_error"] = "baseline failed to build"
            return
        reply = self._timed(task, key, bkey, args, res, trial)
        if reply is None:
            return
        c = self.config
        # The timing loop has inputs of its own: what it leaves must be their answer, not a stored one.
        v = check_outputs(task, list(reply.get("outputs_after") or []), trial.refs, trial.ties, c.max_mismatches)
        if not v.ok:
            self._wrong(res, v, "outputs after the timing loop", trial, "timing")
            return
        # Timed runs themselves, picked at random after they ran: a kernel that skips the work when it is timed
        # and does it when checked has no way to tell the two apart.
        where, timed = check_timed_runs(task, reply.get("timed_checks", []), c.max_mismatches)
        if timed is not None:
            self._wrong(res, timed, f"timing loop, {where}", trial, "timing")
            return
        cs, bs = summarize(reply["candidate_s"]), summarize(reply["baseline_s"])
        res.candidate_ms, res.baseline_ms = cs["median_s"] * 1e3, bs["median_s"] * 1e3
        res.spread, res.baseline_spread = cs["iqr_rel"], bs["iqr_rel"]
        res.rounds = cs["n"]
        res.speedup = bs["median_s"] / cs["median_s"] if cs["median_s"] > 0 else None
        # Rounds pair the two sides under the same machine conditions: the median of per-round ratios is a
        # drift-robust cross-check of the headline ratio of medians.
        paired = [b / c for c, b in zip(reply["candidate_s"], reply["baseline_s"]) if c > 0]
        cs["rounds_s"], bs["rounds_s"] = list(reply["candidate_s"]), list(reply["baseline_s"])
        res.detail["timing"] = {"candidate": cs, "baseline": bs, "threads": self.threads,
                                "paired_speedup_median": float(np.median(paired)) if paired else None,
                                "checked_runs": sorted(int(k["run"]) for k in reply.get("timed_checks", []))}

    def _done(self, res: EvalResult, t_start: float, compile_s: float | None) -> EvalResult:
        res.eval_s = time.perf_counter() - t_start
        res.overhead_s = res.eval_s - (compile_s or 0.0)
        if res.status == "pending":
            res.status = res.failure or "ok"
        return res

    def _size_rounds(self, key: str, bkey: str, args: list, trial: Trial,
                     res: EvalResult) -> tuple[bool, tuple[SideRounds, SideRounds] | None]:
        """(False on a failure, recorded in res; the runs per round of each side, chosen on this side's clock by
        leka.evaluator.calibrate, or None where the worker's requests are not clocked here: a remote board
        sizes its own rounds)."""
        if self.worker.usage() is None:
            return True, None
        c = self.config

        def clock(k: str):
            def run(n: int, arm: bool) -> float | None:
                req = {"op": "calibrate", "key": k, "n": n, "arm": arm}
                if arm:
                    req.update(args=args, timing_inputs=trial.inputs)
                before, own_before = self.worker.usage(), own_wait_s()
                ok = self._ask(req, c.run_timeout_s, res, "timing") is not None
                after, own_after = self.worker.usage(), own_wait_s()
                if not ok or self.worker.last_request_s is None:
                    return None
                return time_running(self.worker.last_request_s, before, after, own_after - own_before)
            return run

        sized = size_rounds(clock(key), clock(bkey), min_run_ms=c.min_run_ms, min_rounds=c.min_rounds,
                            min_time_s=c.min_time_s, slow_run_s=c.slow_run_s, slow_min_rounds=c.slow_min_rounds)
        if sized is not None:
            res.detail["timing_asked"] = {"candidate": dataclasses.asdict(sized[0]),
                                          "baseline": dataclasses.asdict(sized[1])}
        return sized is not None, sized

    def _timed(self, task: Task, key: str, bkey: str, args: list, res: EvalResult, trial: Trial) -> dict | None:
        """The timing request, its reply checked against the wall clock. A reply that does not fit the wall
        clock is timed once more before it counts as faked: a burst of load on a shared machine can make an
        honest loop's clock disagree once, while a loop that fakes its times disagrees every time."""
        c = self.config
        timing = {"warmup": c.warmup, "min_rounds": c.min_rounds, "max_rounds": c.max_rounds,
                  "min_time_s": c.min_time_s, "min_run_ms": c.min_run_ms}
        floor = run_floor(task, self.target, self.threads)
        in_names = [a.name for a in task.inputs]
        for attempt in range(2):
            sized, asked = self._size_rounds(key, bkey, args, trial, res)
            if not sized:
                return None
            asked_timing = timing if asked is None else {**timing, "candidate_n": asked[0].n,
                                                         "baseline_n": asked[1].n, **slow_side(c, asked)}
            before = self.worker.usage()
            reply = self._ask({"op": "time", "key": key, "baseline_key": bkey, "args": args,
                               "timing_inputs": trial.inputs, "timing": asked_timing}, c.run_timeout_s, res,
                              "timing")
            if reply is None:
                return None
            after = self.worker.usage()
            usage = after - before if before is not None and after is not None else None
            if usage is not None:  # how loaded the machine was while timing (wait: runnable, no core free)
                res.detail["timing_usage"] = {"wall_s": self.worker.last_request_s, "cpu_s": usage.cpu_s,
                                              "wait_s": usage.wait_s}
            problem = plausible(reply, self.worker.last_request_s, c.min_run_ms, floor=floor, usage=usage,
                                asked=asked, warmup=int(asked_timing["warmup"])) or \
                inputs_unchanged(trial.inputs, list(reply.get("inputs_after") or []), in_names)
            if not problem:
                return reply
            if attempt or "inconsistent with wall clock" not in problem:
                break
            res.detail["timing_retried"] = problem
        res.fail("wrong", f"timing loop: {problem}", "timing")
        return None


def slow_side(c: EvalConfig, asked: tuple[SideRounds, SideRounds]) -> dict[str, float]:
    """A slow pair's timing (calibrate.slow_pair, EvalConfig.slow_run_s): c.slow_min_rounds rounds, which its
    rounds were sized for (each side's min_time_s is reached in them), and no warm-up; nothing to change
    otherwise. Fewer rounds widen the spread a winner must clear (leka.optimize.tune.noise_floor)."""
    if not slow_pair(asked, c.slow_run_s):
        return {}
    return {"min_rounds": c.slow_min_rounds, "warmup": 0, "min_time_s": 0.0}
