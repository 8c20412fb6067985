"""The local executor: jobs one after another in this process (a benchmark sample is judged by this process's
isolated evaluator worker, kept across samples of the same target and evaluation settings)."""
from __future__ import annotations

import atexit
from typing import Generator, Iterable, Iterator

from .base import (EVALUATORS, PLACED, EventSink, Job, JobContext, JobDone, JobFn, LocalEnv, SampleOutcome,
                   SampleSpec, run_samples, where)


class LocalExecutor:
    """env: the driver's evaluator, budget and method, shared by the samples (leka.bench.runner.run_benchmark);
    None: each sample makes its own from its spec, as on Ray."""

    name = "local"

    def __init__(self, env: LocalEnv | None = None) -> None:
        self.env = env
        if env is None:
            atexit.register(self.close)

    def run_jobs(self, fn: JobFn, jobs: Iterable[Job], on_event: EventSink | None = None) -> Generator[JobDone, None, None]:
        placed = where(self.name)
        send = (lambda item: on_event(*item)) if on_event is not None else None
        for job in jobs:
            if on_event is not None:
                on_event(job.key, PLACED, placed)
            try:
                value = fn(job.payload, JobContext(job.key, placed, send, self.env))
            except Exception as e:  # noqa: BLE001 - a job that raises fails alone, as a Ray task would
                from leka.errors import error_line

                yield JobDone(job, error=error_line(e), where=placed)
                continue
            yield JobDone(job, value, where=placed)

    def run(self, specs: Iterable[SampleSpec], on_event: EventSink | None = None) -> Iterator[SampleOutcome]:
        return run_samples(self, specs, on_event)

    def close(self) -> None:
        if self.env is None:  # an env's evaluator is its driver's to close
            EVALUATORS.close()
