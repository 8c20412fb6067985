"""The jobs that tune a model's kernels, and the rules that decide them.

The jobs run wherever an executor puts them (leka/executors/tuning.py `tune_on_executor`: a fresh local worker
process per job by default, one Ray task per job with --executor ray); run_tuning_job is their one entry point.
Each job builds its own Evaluator and runs `method.run(task, target, ctx)` under the kernel's share of the budget.
The method's final answer is the decision: a correct candidate faster than the default build (as the evaluator
re-measured it) replaces the kernel; otherwise the default build stays. The driver writes the decisions to the
tuning database as they finish, so an interrupted optimisation loses no finished kernel (--resume).
The quick pass, one job (run_quick), judges the offline rules' first candidates of each of its kernels once: with a
minutes budget every kernel without a decision, before any search (rounds.quick_first); without one, the kernels
under the share threshold, after the searches.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from leka.budget import Budget, with_minutes

from .db import TuningDB, Winner
from .extract import KernelSpec, make_task, spec_bytes
from .rounds import quick_how, search_how

# A winner must beat the default build by more than timing noise (docs: "fast" means beyond the noise).
MIN_SPEEDUP = 1.05
QUICK_CANDIDATES = 2  # offline-rule candidates judged per kernel in the quick pass
QUICK_KEY = "quick-pass"  # the quick job's key among an executor's jobs (not a kernel key)


# The evaluator's worker runs under an address-space limit (EvalConfig.mem_limit_gb, 8 GB). Timing keeps several
# copies of every argument (the uploaded inputs, their alternates and masks, the fresh inputs of each run and the
# checked runs' slots, for each side): light_zfnet512's first fully connected layer (0.30 GB of arguments) ran out of it
# (std::bad_alloc, "measured 0.00x", 27.6 % of the model left at its default build), AlexNet's 0.15 GB fit.
WORKER_GB_PER_ARG_GB = 32.0


def eval_config(specs: "list[KernelSpec]", **kw: Any) -> Any:
    """The EvalConfig for judging these kernels: the worker's memory limit grown with the largest kernel's
    arguments, up to 3/4 of this host's memory."""
    from leka.evaluator import EvalConfig

    largest = max((spec_bytes(s) for s in specs), default=0) / 1e9
    try:
        host_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError):
        host_gb = 16.0
    base = EvalConfig().mem_limit_gb
    return EvalConfig(mem_limit_gb=max(base, min(base + WORKER_GB_PER_ARG_GB * largest, 0.75 * host_gb)), **kw)


@dataclass
class TuneJob:
    spec: KernelSpec
    target: Any  # preset name or target dict
    method: str
    options: dict[str, Any]
    budget: str
    run_id: str
    leka_home: str | None
    rpc: str | None = None  # TRACKER_HOST:PORT:KEY (leka/runners/rpc.py)
    attempt: int = 0  # the round (optimize.rounds): a new search, its own agent run and seed
    # When the round's minutes end (epoch seconds): a search starting later gets at most what is left, and
    # none below LATE_START_MINUTES. Budgets are set when a round starts, and each search may end past its
    # minutes by one evaluation: light_bvlc_alexnet's four 1.1-minute searches took 6.3 minutes (a GEMV
    # evaluation is ~35 s there), so the run reached the build with no minutes left (exit 4, nothing written).
    until: float | None = None


LATE_START_MINUTES = 0.25


def late_start(job: TuneJob) -> Winner | str:
    """The Budget spec a search starting now runs under (its own, capped at the round's end), or, when the
    round's minutes are gone, the decision it leaves: no winner, not exhausted (a later run continues it)."""
    if job.until is None:
        return job.budget
    left = (job.until - time.time()) / 60
    if left >= LATE_START_MINUTES:
        own = Budget.parse(job.budget).limits.get("minutes")
        return job.budget if own is not None and own <= left else with_minutes(job.budget, left)
    why = "budget: the round's minutes ended before this search started"
    return Winner(job.spec.key, job.spec.task_id, None, None, None, None, job.method, job.run_id, None,
                  {"budget": job.budget, "spent": {}, "skipped": why, "how": search_how(job.budget, why)})


def run_job(job: TuneJob, events: Any = None) -> Winner:
    """One kernel, one method attempt (runs in a worker process)."""
    if job.leka_home:
        os.environ["LEKA_HOME"] = job.leka_home
    spec = late_start(job)
    if isinstance(spec, Winner):
        return spec
    # Terminated by the parent (Ctrl-C there): unwind, so the evaluator's worker is closed, not orphaned.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from leka.executors.base import evaluator_for
    from leka.methods import MethodContext, get_method
    from leka.targets import get_target

    preset = get_target(job.target)
    task = make_task(job.spec, preset)
    method = get_method(job.method, job.options)
    budget = Budget.parse(spec)

    if events is not None:
        events.put((job.spec.key, "start", spec))

    def say(msg: str) -> None:
        if events is not None:
            events.put((job.spec.key, "msg", msg[:120]))

    with evaluator_for(preset, eval_config([job.spec]), job.rpc) as ev:
        ctx = MethodContext(evaluator=ev, budget=budget, store=None, run_id=job.run_id, options=dict(job.options),
                            progress=say, sample_idx=job.attempt)
        samples = method.run(task, preset, ctx)
    final = samples[-1] if samples else None
    res = final.result if final is not None else {}
    meta = final.meta if final is not None else {}
    source = final.source if final is not None else None
    ok = is_winner(res) and bool(source)
    detail = {"budget": spec, "spent": budget.spent(), "failure": res.get("failure"),
              "error": (res.get("error") or "")[:300], "search_speedup": meta.get("search_speedup"),
              "stop_reason": meta.get("stop_reason"), "correct": res.get("correct"),
              "measured_speedup": res.get("speedup"), "noise_floor": noise_floor(res),
              "how": search_how(spec, meta.get("stop_reason"))}
    return Winner(job.spec.key, task.id, source if ok else None, res.get("speedup") if ok else None,
                  res.get("candidate_ms"), res.get("baseline_ms"), job.method, job.run_id,
                  meta.get("agent_run"), detail)


@dataclass
class QuickJob:
    specs: list[KernelSpec]  # largest share first
    target: Any
    run_id: str
    leka_home: str | None
    minutes: float | None  # the pass's time limit (None: QUICK_CANDIDATES evaluations per kernel only)
    rpc: str | None = None
    # When the whole run's minutes end (epoch seconds): the pass may run on until then (its kernels' own
    # minutes are a floor; the searches that follow get what it leaves).
    until: float | None = None


def run_quick(job: QuickJob, events: Any = None) -> list[Winner]:
    """The quick pass (a worker process): per kernel, the offline proposer's first QUICK_CANDIDATES schedules
    (its rules, no search) judged once each by one evaluator; the fastest winner replaces the default. Two
    sweeps: each kernel's first candidate (largest share first), then, while time is left, the next ones
    (kernels without a winner first). light_densenet121 (253 kernels) at minutes=10 reached 26 kernels judging
    both candidates of each, ~10 s a kernel; the first candidate won in most (60-100x on the 3x3 convolutions,
    the second 1.0x), while each kernel not reached stays at its default build, 15-100x slower."""
    if job.leka_home:
        os.environ["LEKA_HOME"] = job.leka_home
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from leka.executors.base import evaluator_for
    from leka.proposers import ProposalRequest, get_proposer
    from leka.targets import get_target

    preset = get_target(job.target)
    proposer = get_proposer(None)
    until = None if job.minutes is None else max(time.time() + job.minutes * 60, job.until or 0.0)
    kernels: list[_QuickKernel] = []
    with evaluator_for(preset, eval_config(job.specs), job.rpc) as ev:
        for spec in job.specs:
            if until is not None and time.time() > until:
                break  # out of time: the rest keep their default build (not recorded: tried next run)
            kernels.append(_QuickKernel(spec))
            _quick_step(kernels[-1], events, lambda k: k.judge(preset, proposer, ProposalRequest, ev, 1, until))
        for k in sorted(kernels, key=lambda k: k.best is not None):  # stable: share order within each group
            if k.error is None and len(k.judged) < QUICK_CANDIDATES and (until is None or time.time() <= until):
                _quick_step(k, events, lambda k: k.judge(preset, proposer, ProposalRequest, ev, QUICK_CANDIDATES,
                                                         until))
    return [k.winner(job.run_id) for k in kernels]


def _quick_step(k: "_QuickKernel", events: Any, step: Any) -> None:
    """One step of a kernel's quick pass, its time added to the kernel's and its progress reported."""
    if events is not None:
        events.put((k.spec.key, "start", "quick pass"))
    t0 = time.monotonic()
    try:
        step(k)
    except Exception as e:  # one kernel's failure (its reference, a rule) is its own, not the pass's
        k.fail(f"{type(e).__name__}: {str(e)[:300]}")
    k.spent_s += time.monotonic() - t0
    if events is not None:
        events.put((k.spec.key, "msg", f"quick pass: {k.best[2] if k.best else 'no winner'}"))


@dataclass
class _QuickKernel:
    """One kernel in the quick pass: its rule candidates not yet judged, those judged, and the fastest winner."""
    spec: KernelSpec
    task: Any = None
    pending: list[Any] = field(default_factory=list)
    judged: list[dict[str, Any]] = field(default_factory=list)
    hashes: set[str] = field(default_factory=set)  # the IRs judged
    best: tuple[str, dict[str, Any], str] | None = None
    error: str | None = None
    spent_s: float = 0.0

    def judge(self, preset: Any, proposer: Any, request: Any, ev: Any, k: int, until: float | None) -> None:
        """The rules' first k candidates, each not judged yet judged while time is left (asking for one alone
        is cheaper: the proposer need not run every rule)."""
        from leka.ir import CandidateIR

        if self.task is None:
            self.task = make_task(self.spec, preset)
        props = proposer.propose(request("schedule", CandidateIR.initial(self.task), self.task, preset, k=k))
        self.pending = [p for p in props[:k] if p.ir.hash() not in self.hashes][:max(0, k - len(self.judged))]
        while self.pending and (until is None or time.time() <= until or not self.judged):
            self.judge_next(preset, ev)

    def judge_next(self, preset: Any, ev: Any) -> None:
        if not self.pending:
            return
        prop = self.pending.pop(0)
        self.hashes.add(prop.ir.hash())
        try:
            src = prop.ir.to_tvmscript(preset)
        except Exception as e:  # a rule step TVM refuses at flattening: that candidate is skipped
            self.judged.append({"rule": prop.ir.notes.get("rule"), "error": f"{type(e).__name__}: {str(e)[:120]}"})
            return
        res = ev.evaluate(self.task, src).to_json()
        self.judged.append({"rule": prop.ir.notes.get("rule"), "correct": res.get("correct"),
                            "speedup": res.get("speedup")})
        if is_winner(res) and (self.best is None or res["speedup"] > self.best[1]["speedup"]):
            self.best = (src, res, str(prop.ir.notes.get("rule")))

    def fail(self, error: str) -> None:
        """A step raised: a winner judged before it stands; without one the kernel is recorded as crashed."""
        self.pending = []
        self.error = error

    def winner(self, run_id: str) -> Winner:
        if self.best is None and self.error is not None:
            w = crashed_winner(self.spec.key, self.spec.task_id, "quick-rules", run_id, self.error, "quick pass")
        else:
            w = self._decision(run_id)
        w.detail["spent"] = {"minutes": self.spent_s / 60}
        w.detail["how"] = quick_how(self.spent_s / 60)
        return w

    def _decision(self, run_id: str) -> Winner:
        correct = [j for j in self.judged if j.get("correct")]
        detail = {"budget": "quick pass", "candidates": self.judged, "correct": bool(correct),
                  "measured_speedup": max((j.get("speedup") or 0 for j in correct), default=None),
                  "rule": self.best[2] if self.best else None}
        if self.error is not None:
            detail["error"] = self.error
        if self.best is None:
            return Winner(self.spec.key, self.task.id, None, None, None, None, "quick-rules", run_id, None, detail)
        src, res, _rule = self.best
        detail["noise_floor"] = noise_floor(res)
        return Winner(self.spec.key, self.task.id, src, res.get("speedup"), res.get("candidate_ms"),
                      res.get("baseline_ms"), "quick-rules", run_id, None, detail)


def run_tuning_job(job: "TuneJob | QuickJob", events: Any = None) -> Winner | list[Winner]:
    """An executor's job of `leka optimize`: one kernel's search (a Winner) or the quick pass (a list of them).
    `events`: anything with put((key, kind, payload)), an executor's JobContext or a queue."""
    return run_quick(job, events) if isinstance(job, QuickJob) else run_job(job, events)


def noise_floor(res: dict[str, Any]) -> float:
    """The speedup a winner must exceed: MIN_SPEEDUP, raised by the uncertainty of the two medians (half
    their relative IQRs over sqrt(rounds)), so a loaded machine asks for a clearer gain."""
    rounds = max(int(res.get("rounds") or 1), 1)
    spread = (res.get("spread") or 0.0) + (res.get("baseline_spread") or 0.0)
    return max(MIN_SPEEDUP, 1.0 + 0.5 * spread / rounds ** 0.5)


def crashed_winner(key: str, task_id: str, method: str, run_id: str, error: str, budget: Any) -> Winner:
    """A kernel whose tuning job died (a crashed method, a lost node): the default build stays, the reason kept."""
    return Winner(key, task_id, None, None, None, None, method, run_id, None, {"error": error, "budget": budget})


def record_decision(db: TuningDB, w: Winner, tkey: str) -> None:
    """Into the db at once, a winner or a settled default (what --resume relies on)."""
    if w.source or settled_default(w):
        db.put(w, tkey)


def settled_default(w: Winner) -> bool:
    """A kept default is worth remembering only when the attempt ran and found no gain; a failed attempt
    (crash, timeout) or a gain lost in the noise is tried again by the next run."""
    return bool(w.detail.get("correct")) and (w.detail.get("measured_speedup") or 0) <= MIN_SPEEDUP


def is_winner(res: dict[str, Any]) -> bool:
    """Correct, faster than the noise floor, and the per-round paired ratios agree (when recorded)."""
    paired = ((res.get("detail") or {}).get("timing") or {}).get("paired_speedup_median")
    return (bool(res.get("correct")) and (res.get("speedup") or 0) > noise_floor(res)
            and (paired is None or paired > MIN_SPEEDUP))
