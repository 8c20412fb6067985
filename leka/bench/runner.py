"""The benchmark run loop: (task x sample_idx) attempts of one method on one target, each stored as
soon as it finishes, so a killed run resumes where it stopped (`--resume RUN` skips every finished
(task, method, sample_idx) key and keeps the run's original selection and settings).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from leka.errors import LekaError

from . import metrics
from .store import ResultStore

BASELINE_METHODS = ("tvm-naive", "tvm-dlight", "onnxruntime")  # their sources are re-derivable: not stored


@dataclass
class Selection:
    level: int | None = None
    domain: str | None = None
    pattern: str | None = None
    ids: Sequence[str] = ()
    limit: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "domain": self.domain, "pattern": self.pattern, "ids": list(self.ids),
                "limit": self.limit}


def select_tasks(sel: Selection, task_paths: Iterable[str] = ()) -> list[Any]:
    """Tasks matching the filters, in suite order; the limit (applied last) spreads over domains and patterns."""
    from leka.tasks import DOMAINS, LEVELS, all_tasks

    if sel.level is not None and sel.level not in LEVELS:
        raise LekaError(f"--level {sel.level}: levels are {', '.join(map(str, LEVELS))}")
    if sel.domain is not None and sel.domain not in DOMAINS:
        raise LekaError(f"--domain {sel.domain!r}: domains are {', '.join(DOMAINS)}")
    if sel.limit is not None and sel.limit < 1:
        raise LekaError("--limit must be >= 1")
    out = [t for t in all_tasks(task_paths)
           if (sel.level is None or t.level == sel.level) and (sel.domain is None or t.domain == sel.domain)
           and (sel.pattern is None or t.pattern == sel.pattern) and (not sel.ids or t.id in sel.ids)]
    if sel.ids:
        missing = sorted(set(sel.ids) - {t.id for t in out})
        if missing:
            raise LekaError(f"unknown or filtered-out task id(s): {', '.join(missing)}")
    return spread_sample(out, sel.limit) if sel.limit else out


def spread_sample(tasks: Sequence[Any], n: int) -> list[Any]:
    """n tasks spread over domains and patterns, deterministically: domains take turns, and within a
    domain each pattern gives one task before any gives a second. Returned in suite order."""
    by_domain: dict[str, dict[str, list[Any]]] = {}
    for t in tasks:  # dicts keep first-appearance (suite) order
        by_domain.setdefault(t.domain, {}).setdefault(t.pattern, []).append(t)
    queues = []
    for patterns in by_domain.values():
        lists = list(patterns.values())
        queues.append([x[i] for i in range(max(map(len, lists))) for x in lists if i < len(x)])
    picked: set[int] = set()
    while len(picked) < min(n, len(tasks)):
        for q in queues:
            if q and len(picked) < n:
                picked.add(id(q.pop(0)))
    return [t for t in tasks if id(t) in picked]


# Versions whose change makes earlier samples incomparable: the code that produced them.
CODE_VERSION_KEYS = ("leka", "tvm", "llvm", "code")  # code: the git commit (evaluator.result.code_version)


class SettingsMismatch(LekaError):
    pass


def settings_mismatch(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """The differences between a run's stored settings and the ones asked for, as one phrase; None when
    they match. Settings missing on either side are not compared (runs recorded before they existed), nor
    versions only one side knows; an option or budget limit set on one side only is a difference."""
    diffs = []
    for key in sorted(set(stored) & set(wanted)):
        a, b = stored[key], wanted[key]
        if isinstance(a, dict) and isinstance(b, dict):
            keys = set(a) & set(b) if key == "versions" else set(a) | set(b)
            for k in sorted(keys):
                if a.get(k) != b.get(k):
                    diffs.append(f"{key} {k}: {a.get(k)!r} stored, {b.get(k)!r} now")
        elif a != b:
            diffs.append(f"{key}: {a!r} stored, {b!r} now")
    return "; ".join(diffs) if diffs else None


def run_settings(method: str, options: dict[str, Any], budget_limits: dict[str, Any] | None,
                 versions: dict[str, str] | None) -> dict[str, Any]:
    """What must match for a stored run to be continued: method, its options (proposer included),
    the budget's limits and the code versions."""
    out: dict[str, Any] = {"method": method, "options": dict(options)}
    if budget_limits is not None:
        out["budget"] = {k: v for k, v in budget_limits.items() if v is not None}
    if versions:
        out["versions"] = {k: versions[k] for k in CODE_VERSION_KEYS if k in versions}
    return out


def check_resumable(store: ResultStore, run_id: str, method: Any, options: dict[str, Any], budget: Any) -> None:
    """Refuse to continue run `run_id` under other settings than it was started with: its finished samples
    would be reported as results of settings they were not made with."""
    from leka.budget import Budget

    run = store.get_run(run_id)
    cfg = run["config"]
    stored = run_settings(run["method"], cfg.get("options") or {},
                          Budget.parse(cfg["budget"]).limits if "budget" in cfg else None, run.get("versions"))
    try:
        from leka.evaluator import versions

        now_versions = versions()
    except Exception:  # noqa: BLE001 - without TVM there is nothing to compare against
        now_versions = None
    wanted = run_settings(getattr(method, "name", str(method)), options,
                          getattr(budget, "limits", None), now_versions)
    why = settings_mismatch(stored, wanted)
    if why:
        raise SettingsMismatch(f"run {run_id} exists with other settings ({why}); start a new run, or continue it "
                               "with the settings it was made with (`leka bench run --resume RUN`)")


def workload_signature(task: Any) -> str:
    """Shapes and dtypes of the args, e.g. "A[256,256]f32,B[256,256]f32->C[256,256]f32"."""
    def one(a) -> str:
        dt = a.dtype.replace("float", "f").replace("uint", "u").replace("int", "i")
        return f"{a.name}[{','.join(map(str, a.shape))}]{dt}"
    sig = ",".join(one(a) for a in task.inputs) + "->" + ",".join(one(a) for a in task.outputs)
    return sig if len(sig) <= 300 else sig[:280] + f"...({len(task.args)} args)"


def build_record(task: Any, target: Any, sample: Any, sample_idx: int) -> dict[str, Any]:
    rec = sample.to_record()
    rec.update(task=task.id, pattern=task.pattern, workload=workload_signature(task), level=task.level,
               domain=task.domain, dtype=task.dtype, flops=task.flops, bytes=task.bytes, target=target.name,
               sample_idx=sample_idx, mismatch_count=rec.get("mismatch_count"))
    from leka.executors.base import where

    rec["where"] = where("local")  # an executor that ran it elsewhere replaces it (leka/executors)
    rec["roofline_fraction"] = (metrics.roofline_fraction(task.flops, task.bytes, rec["candidate_ms"], target.facts)
                                if metrics.is_correct(rec) and rec.get("candidate_ms") else None)
    if sample.method not in BASELINE_METHODS and sample.source is not None:
        rec["source"] = sample.source
    return rec


def measurement_rows(rec: dict[str, Any]) -> list[tuple[str, str, int, float]]:
    """Timing rows for the measurements table from the evaluator's detail.timing summaries."""
    rows: list[tuple[str, str, int, float]] = []
    timing = (rec.get("detail") or {}).get("timing") or {}
    for side in ("candidate", "baseline"):
        s = timing.get(side) or {}
        for i, t in enumerate(s.get("rounds_s") or []):  # per-round times, when the evaluator keeps them
            rows.append((side, "round", i, t * 1e3))
        for stat, key in (("median", "median_s"), ("min", "min_s")):
            if s.get(key) is not None:
                rows.append((side, stat, 0, s[key] * 1e3))
    return rows


def failed_record(task: Any, target: Any, method: str, sample_idx: int, error: str, budget: Any) -> dict[str, Any]:
    """A method that raised (not a candidate failure the evaluator saw): counted as a failed sample."""
    from leka.methods import Sample

    s = Sample(result={"task": task.id, "target": target.name, "compiled": False, "correct": None,
                       "failure": "method_error", "error": error, "status": "method_error", "baseline": None},
               method=method, budget_spent=budget.spent() if budget is not None else {})
    return build_record(task, target, s, sample_idx)


@dataclass
class RunOutcome:
    run_id: str
    done: int = 0  # samples written by this invocation
    skipped_finished: int = 0
    not_applicable: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None  # "budget: ..." when the budget ran out
    pending: int = 0  # attempts paused on measurements owed by a remote host (no sample written yet)
    wall_s: float = 0.0


def run_benchmark(store: ResultStore, run_id: str, tasks: Sequence[Any], target: Any, method: Any, samples: int,
                  evaluator: Any, budget: Any, options: dict[str, Any],
                  on_outcome: Callable[[Any], None] | None = None, progress: Callable[[str], None] | None = None,
                  on_event: Callable[[str, str, Any], None] | None = None) -> RunOutcome:
    """Run every missing (task, sample_idx) of `run_id` in this process, through the local executor (the same
    attempts a Ray task runs, sharing this process's evaluator and the run's budget); returns what this
    invocation did. on_event and on_outcome are the hooks of leka.executors.fanout.run_fanout (what
    FanoutProgress shows): the executor's events (PLACED as an attempt begins), each SampleOutcome as it ends."""
    from leka.executors.base import LocalEnv, SampleSpec
    from leka.executors.local import LocalExecutor

    check_resumable(store, run_id, method, options, budget)
    out = RunOutcome(run_id)
    t0 = time.perf_counter()
    finished, by_id = store.finished_keys(run_id), {t.id: t for t in tasks}
    target_spec = target.target if target.name == "custom" else target.name
    specs = [SampleSpec(run_id, t.id, i, method.name, target_spec, options) for t in tasks for i in range(samples)]
    out.skipped_finished = sum(1 for s in specs if s.key() in finished)
    todo = [s for s in specs if s.key() not in finished]
    env = LocalEnv(evaluator, target, budget, store, progress, method, by_id)
    try:
        for o in LocalExecutor(env).run(todo, on_event):
            task = by_id[o.spec.task_id]
            if on_outcome is not None:
                on_outcome(o)
            if o.stopped is not None:
                out.stopped = o.stopped
                store.add_event(run_id, "budget_exhausted", {"error": o.stopped.removeprefix("budget: ")})
                break
            if o.pending or o.not_applicable is not None:  # pending: a remote round is owed; --resume goes on
                out.pending += o.pending
                if o.not_applicable is not None:
                    out.not_applicable[task.id] = o.not_applicable
                continue
            store.add_sample(run_id, o.record, candidates=o.candidates, measurements=measurement_rows(o.record))
            out.done += 1
    except BaseException as e:  # never left "started": the run's last event says why it stopped
        _record_stop(store, run_id, e, out)
        raise
    out.wall_s = time.perf_counter() - t0
    if out.stopped is None:  # "paused": attempts wait for a remote host's measurements
        store.add_event(run_id, "paused" if out.pending else "finished",
                        {"samples_written": out.done, "not_applicable": out.not_applicable, "wall_s": out.wall_s,
                         "pending": out.pending})
    return out


def attempt(task: Any, target: Any, method: Any, idx: int, ctx: Any,
            budget: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One attempt's record and its intermediate candidates' records: the one implementation, run by every
    executor (leka.executors.base.run_sample). A method crash or a limit that is not the run's `budget` (the
    task's own) is a failed sample; the run's budget, a pending remote round and "not applicable" propagate."""
    from leka.budget import AttemptBudgetExceeded, BudgetExceeded
    from leka.methods import MethodNotApplicable
    from leka.remote.pending import MeasurementPending

    try:
        result = method.run(task, target, ctx)
        if not result:
            raise LekaError("method returned no sample")
        rec = build_record(task, target, result[-1], idx)
        return rec, [build_record(task, target, s, idx) for s in result[:-1]]
    except BudgetExceeded as e:
        if budget is not None and not isinstance(e, AttemptBudgetExceeded):
            raise  # the run's own budget: the run stops
        rec = failed_record(task, target, method.name, idx, f"attempt {e}", None)
        rec["failure"] = rec["status"] = "budget"
        return rec, []
    except (MeasurementPending, MethodNotApplicable):
        raise
    except Exception as e:  # noqa: BLE001 - a method crash is a failed sample, not a dead run
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        err = msg if isinstance(e, LekaError) else f"{type(e).__name__}: {msg}"
        return failed_record(task, target, method.name, idx, err[:2000], budget), []


def _record_stop(store: ResultStore, run_id: str, e: BaseException, out: RunOutcome) -> None:
    """The event that says why a run stopped early (interrupted, or failed with the error's first line)."""
    lines = str(e).strip().splitlines()
    store.add_event(run_id, "interrupted" if isinstance(e, (KeyboardInterrupt, SystemExit)) else "failed",
                    {"error": f"{type(e).__name__}: {lines[0] if lines else ''}"[:500],
                     "samples_written": out.done})
