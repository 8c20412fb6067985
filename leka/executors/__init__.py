"""Executors: where the work that fans out runs — `local` (this process, the default of bench run and experiment
run), the pool (pool.py: a fresh worker process per job, N at a time, the default of `leka optimize`) or `ray`
(one Ray task per job on a Ray cluster). A job is a module-level function and plain data: a benchmark sample
(bench run, the cells of experiment run) or a kernel of `leka optimize` (tuning.py). See base.py."""
from .base import EXECUTORS, Executor, Job, JobDone, SampleOutcome, SampleSpec, get_executor

__all__ = ["EXECUTORS", "Executor", "Job", "JobDone", "SampleOutcome", "SampleSpec", "get_executor"]
