"""Tune each kernel with a registered method, in worker processes, with live progress.

Each job builds its own Evaluator and runs `method.run(task, target, ctx)` under the kernel's share of the
budget. The method's final answer is the decision: a correct candidate faster than the default build (as
the evaluator re-measured it) replaces the kernel; otherwise the default build stays. Decisions go to the
tuning database as they finish, so an interrupted optimisation loses no finished kernel (--resume).
Kernels under the share threshold are not searched: one job (run_quick) judges the offline rules' first
candidates for each of them once, within their pooled slice of the time (profile.QUICK_FRACTION).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from .db import TuningDB, Winner, target_key
from .extract import KernelSpec, make_task
from .profile import KernelProfile
from .rounds import quick_how, search_how

# A winner must beat the default build by more than timing noise (docs: "fast" means beyond the noise).
MIN_SPEEDUP = 1.05
QUICK_CANDIDATES = 2  # offline-rule candidates judged per kernel in the quick pass
QUICK_KEY = "quick-pass"  # the quick job's key among the running jobs (not a kernel key)


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


def run_job(job: TuneJob, events: Any = None) -> Winner:
    """One kernel, one method attempt (runs in a worker process)."""
    if job.leka_home:
        os.environ["LEKA_HOME"] = job.leka_home
    # Terminated by the parent (Ctrl-C there): unwind, so the evaluator's worker is closed, not orphaned.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from leka.budget import Budget
    from leka.evaluator import EvalConfig
    from leka.executors.base import evaluator_for
    from leka.methods import MethodContext, get_method
    from leka.targets import get_target

    preset = get_target(job.target)
    task = make_task(job.spec, preset)
    method = get_method(job.method, job.options)
    budget = Budget.parse(job.budget)

    if events is not None:
        events.put((job.spec.key, "start", job.budget))

    def say(msg: str) -> None:
        if events is not None:
            events.put((job.spec.key, "msg", msg[:120]))

    with evaluator_for(preset, EvalConfig(), job.rpc) as ev:
        ctx = MethodContext(evaluator=ev, budget=budget, store=None, run_id=job.run_id, options=dict(job.options),
                            progress=say, sample_idx=job.attempt)
        samples = method.run(task, preset, ctx)
    final = samples[-1] if samples else None
    res = final.result if final is not None else {}
    meta = final.meta if final is not None else {}
    source = final.source if final is not None else None
    ok = is_winner(res) and bool(source)
    detail = {"budget": job.budget, "spent": budget.spent(), "failure": res.get("failure"),
              "error": (res.get("error") or "")[:300], "search_speedup": meta.get("search_speedup"),
              "stop_reason": meta.get("stop_reason"), "correct": res.get("correct"),
              "measured_speedup": res.get("speedup"), "noise_floor": noise_floor(res),
              "how": search_how(job.budget, meta.get("stop_reason"))}
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
    # When the whole run's minutes end (epoch seconds): the pass runs after the searched kernels, and what
    # their searches left unspent (an agent stops when its rules are exhausted) is its time too.
    until: float | None = None


def run_quick(job: QuickJob, events: Any = None) -> list[Winner]:
    """The quick pass (a worker process): per kernel, the offline proposer's first QUICK_CANDIDATES schedules
    (its rules, no search) judged once each by one evaluator; the fastest winner replaces the default."""
    if job.leka_home:
        os.environ["LEKA_HOME"] = job.leka_home
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from leka.evaluator import EvalConfig
    from leka.executors.base import evaluator_for
    from leka.proposers import ProposalRequest, get_proposer
    from leka.targets import get_target

    preset = get_target(job.target)
    proposer = get_proposer(None)
    out: list[Winner] = []
    until = None if job.minutes is None else max(time.time() + job.minutes * 60, job.until or 0.0)
    with evaluator_for(preset, EvalConfig(), job.rpc) as ev:
        for spec in job.specs:
            if until is not None and time.time() > until:
                break  # out of time: the rest keep their default build (not recorded: tried next run)
            if events is not None:
                events.put((spec.key, "start", "quick pass"))
            t_k = time.monotonic()
            try:
                out.append(_quick_one(spec, preset, proposer, ev, job.run_id, ProposalRequest))
            except Exception as e:  # one kernel's failure (its reference, a rule) is its own, not the pass's
                out.append(crashed_winner(spec.key, spec.task_id, "quick-rules", job.run_id,
                                          f"{type(e).__name__}: {str(e)[:300]}", "quick pass"))
            out[-1].detail["spent"] = {"minutes": (time.monotonic() - t_k) / 60}
            out[-1].detail["how"] = quick_how(out[-1].detail["spent"]["minutes"])
            if events is not None:
                events.put((spec.key, "msg", f"quick pass: {out[-1].detail.get('rule') or 'no winner'}"))
    return out


def _quick_one(spec: KernelSpec, preset: Any, proposer: Any, ev: Any, run_id: str, request: Any) -> Winner:
    from leka.ir import CandidateIR

    task = make_task(spec, preset)
    props = proposer.propose(request("schedule", CandidateIR.initial(task), task, preset, k=QUICK_CANDIDATES))
    best: tuple[str, dict[str, Any], str] | None = None
    judged: list[dict[str, Any]] = []
    for prop in props[:QUICK_CANDIDATES]:
        try:
            src = prop.ir.to_tvmscript(preset)
        except Exception as e:  # a rule step TVM refuses at flattening: that candidate is skipped
            judged.append({"rule": prop.ir.notes.get("rule"), "error": f"{type(e).__name__}: {str(e)[:120]}"})
            continue
        res = ev.evaluate(task, src).to_json()
        judged.append({"rule": prop.ir.notes.get("rule"), "correct": res.get("correct"),
                       "speedup": res.get("speedup")})
        if is_winner(res) and (best is None or res["speedup"] > best[1]["speedup"]):
            best = (src, res, str(prop.ir.notes.get("rule")))
    correct = [j for j in judged if j.get("correct")]
    detail = {"budget": "quick pass", "candidates": judged, "correct": bool(correct),
              "measured_speedup": max((j.get("speedup") or 0 for j in correct), default=None),
              "rule": best[2] if best else None}
    if best is None:
        return Winner(spec.key, task.id, None, None, None, None, "quick-rules", run_id, None, detail)
    src, res, _rule = best
    detail["noise_floor"] = noise_floor(res)
    return Winner(spec.key, task.id, src, res.get("speedup"), res.get("candidate_ms"), res.get("baseline_ms"),
                  "quick-rules", run_id, None, detail)


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


def tune_all(profs: list[KernelProfile], preset: Any, method: str, options: dict[str, Any], run_id: str,
             db: TuningDB, jobs: int, on_event: Callable[[str, str, Any], None],
             rpc: str | None = None, until: float | None = None, attempt: int = 0) -> dict[str, Winner]:
    """Tune every kernel with a budget and pass the quick ones (neither already decided in the db); returns the
    new decisions by key. `until`: when the whole minutes budget ends (epoch seconds), the quick pass's
    deadline if later than its own share."""
    tkey = target_key(preset)
    todo = [p for p in profs if p.budget is not None]
    quick = [p for p in profs if p.quick and p.budget is None and preset.runnable and db.get(p.spec.key, tkey) is None]
    if not todo and not quick:
        return {}
    target = preset.target if preset.name == "custom" else preset.name
    home = os.environ.get("LEKA_HOME")
    ctx = mp.get_context("spawn")  # TVM's thread pools do not survive fork
    manager = ctx.Manager()
    events = manager.Queue()
    # One fresh process per kernel (maxtasksperchild=1); a Pool, unlike ProcessPoolExecutor, can be terminated.
    pool = ctx.Pool(processes=max(1, jobs), maxtasksperchild=1)
    try:
        running: dict[str, tuple[Any, list[KernelProfile]]] = {  # AsyncResults of a Winner or a quick pass's list
            p.spec.key: (pool.apply_async(run_job, (TuneJob(p.spec, target, method, options, p.budget or "",
                                                            run_id, home, rpc, attempt), events)), [p])
            for p in todo}
        if quick:  # after the searched kernels: they matter more if the time runs out
            limit = None if any(p.quick_minutes is None for p in quick) else sum(p.quick_minutes or 0 for p in quick)
            job = QuickJob([p.spec for p in quick], target, run_id, home, limit, rpc, until)
            running[QUICK_KEY] = (pool.apply_async(run_quick, (job, events)), quick)
        return _collect(running, events, on_event, db, tkey, method, run_id)
    except BaseException:  # Ctrl-C or a failure here: stop the jobs (each closes its evaluator on SIGTERM)
        pool.terminate()
        raise
    finally:
        pool.close()
        pool.join()
        manager.shutdown()


def _collect(running: dict[str, tuple[Any, list[KernelProfile]]], events: Any,
             on_event: Callable[[str, str, Any], None], db: TuningDB, tkey: str, method: str,
             run_id: str) -> dict[str, Winner]:
    """Decisions as the jobs finish, each stored in the db at once (what --resume relies on)."""
    done: dict[str, Winner] = {}
    while running:
        time.sleep(0.3)
        _drain(events, on_event)
        for key in [k for k, (res, _p) in running.items() if res.ready()]:
            res, profs = running.pop(key)
            try:
                got = res.get()
                winners = got if isinstance(got, list) else [got]
            except Exception as e:  # a method that crashed: the default build stays, the reason is kept
                winners = [crashed_winner(p.spec.key, p.spec.task_id, method, run_id,
                                          f"{type(e).__name__}: {str(e)[:300]}", p.budget) for p in profs]
            for w in winners:
                record_decision(db, w, tkey)
                done[w.kernel_key] = w
                on_event(w.kernel_key, "done", w)
    _drain(events, on_event)
    return done


def _drain(events: Any, on_event: Callable[[str, str, Any], None]) -> None:
    while True:
        try:
            key, kind, payload = events.get_nowait()
        except (queue_mod.Empty, EOFError, OSError):
            return
        on_event(key, kind, payload)
