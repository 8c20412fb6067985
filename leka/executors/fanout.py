"""The driver of fanned-out benchmark runs: the missing samples of one or more runs go to an executor as one
batch of jobs, and each outcome is written to its run in the store as it comes back (the driver alone writes
the store), so a killed driver resumes with `--resume` and repeats no stored sample (the keys come from
ResultStore.finished_keys)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from leka.bench.runner import RunOutcome, check_resumable, measurement_rows

from .base import EventSink, Executor, SampleOutcome, SampleSpec


@dataclass
class FanoutRun:
    """One bench run's share of a fan-out; spec_kw: SampleSpec's target_spec, trials, measure, task_paths, rpc."""
    run_id: str
    tasks: Sequence[Any]
    method: Any
    samples: int
    options: dict[str, Any]
    spec_kw: dict[str, Any] = field(default_factory=dict)


def missing_specs(store: Any, run_id: str, tasks: Sequence[Any], method: str, samples: int,
                  **spec_kw: Any) -> tuple[list[SampleSpec], int]:
    """(specs of the samples the store does not hold yet, how many it holds)."""
    finished = store.finished_keys(run_id)
    specs = [SampleSpec(run_id=run_id, task_id=t.id, sample_idx=i, method=method, **spec_kw)
             for t in tasks for i in range(samples)]
    todo = [s for s in specs if s.key() not in finished]
    return todo, len(specs) - len(todo)


def run_fanout(store: Any, run_id: str, tasks: Sequence[Any], method: Any, samples: int, executor: Executor,
               options: dict[str, Any], *, on_outcome: Callable[[SampleOutcome], None] | None = None,
               on_event: EventSink | None = None, **spec_kw: Any) -> RunOutcome:
    """Run every missing sample of `run_id` on `executor` (run_fanouts with one run)."""
    run = FanoutRun(run_id, tasks, method, samples, options, spec_kw)
    return run_fanouts(store, [run], executor, on_outcome=on_outcome, on_event=on_event)[run_id]


def run_fanouts(store: Any, runs: Sequence[FanoutRun], executor: Executor, *,
                on_outcome: Callable[[SampleOutcome], None] | None = None,
                on_event: EventSink | None = None) -> dict[str, RunOutcome]:
    """Every missing sample of every run, as one batch of jobs (a cluster works on all runs at once); each run
    gets its "finished" event, or "interrupted"/"failed" with why, as one run of its own would."""
    for r in runs:
        check_resumable(store, r.run_id, r.method, r.options, None)
    outs = {r.run_id: RunOutcome(r.run_id) for r in runs}
    t0 = time.perf_counter()
    todo: list[SampleSpec] = []
    for r in runs:
        specs, outs[r.run_id].skipped_finished = missing_specs(store, r.run_id, r.tasks, r.method.name, r.samples,
                                                               options=r.options, **r.spec_kw)
        todo += specs
    try:
        for o in executor.run(todo, on_event):
            out = outs[o.spec.run_id]
            if o.not_applicable is not None:
                out.not_applicable[o.spec.task_id] = o.not_applicable
            elif o.pending or o.stopped:  # no run budget or remote round crosses an executor: never expected here
                raise RuntimeError(f"sample {o.spec.job_key()} came back {o.stopped or 'pending'} from {executor.name}")
            else:
                store.add_sample(o.spec.run_id, o.record, candidates=o.candidates,
                                 measurements=measurement_rows(o.record))
                out.done += 1
            if on_outcome is not None:
                on_outcome(o)
    except BaseException as e:  # never left "started": each run's last event says why it stopped
        lines = str(e).strip().splitlines()
        kind = "interrupted" if isinstance(e, (KeyboardInterrupt, SystemExit)) else "failed"
        for out in outs.values():
            store.add_event(out.run_id, kind, {"error": f"{type(e).__name__}: {lines[0] if lines else ''}"[:500],
                                               "samples_written": out.done, "executor": executor.name})
        raise
    for out in outs.values():
        out.wall_s = time.perf_counter() - t0
        store.add_event(out.run_id, "finished", {"samples_written": out.done, "not_applicable": out.not_applicable,
                                                 "wall_s": out.wall_s, "executor": executor.name})
    return outs
