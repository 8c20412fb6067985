"""The driver of a fanned-out benchmark run: the missing samples of a run go to an executor, and each outcome
is written to the store as it comes back (the driver alone writes the store), so a killed driver resumes with
`--resume RUN` and repeats no stored sample (the keys come from ResultStore.finished_keys)."""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from leka.bench.runner import RunOutcome, check_resumable, measurement_rows

from .base import Executor, SampleOutcome, SampleSpec


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
               **spec_kw: Any) -> RunOutcome:
    """Run every missing sample of `run_id` on `executor`; spec_kw: SampleSpec's target_spec, trials,
    measure, task_paths, rpc."""
    check_resumable(store, run_id, method, options, None)
    out = RunOutcome(run_id)
    t0 = time.perf_counter()
    todo, out.skipped_finished = missing_specs(store, run_id, tasks, method.name, samples, options=options,
                                               **spec_kw)
    try:
        for o in executor.run(todo):
            if o.not_applicable is not None:
                out.not_applicable[o.spec.task_id] = o.not_applicable
            else:
                store.add_sample(run_id, o.record, candidates=o.candidates, measurements=measurement_rows(o.record))
                out.done += 1
            if on_outcome is not None:
                on_outcome(o)
    except BaseException as e:  # never left "started": the run's last event says why it stopped
        lines = str(e).strip().splitlines()
        store.add_event(run_id, "interrupted" if isinstance(e, (KeyboardInterrupt, SystemExit)) else "failed",
                        {"error": f"{type(e).__name__}: {lines[0] if lines else ''}"[:500],
                         "samples_written": out.done, "executor": executor.name})
        raise
    out.wall_s = time.perf_counter() - t0
    store.add_event(run_id, "finished", {"samples_written": out.done, "not_applicable": out.not_applicable,
                                         "wall_s": out.wall_s, "executor": executor.name})
    return out
