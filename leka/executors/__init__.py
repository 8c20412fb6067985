"""Executors: where the work that fans out (benchmark samples) runs — `local` (this process, one isolated
evaluator worker, the default) or `ray` (one Ray task per sample on a Ray cluster). See base.py."""
from .base import EXECUTORS, Executor, SampleOutcome, SampleSpec, get_executor

__all__ = ["EXECUTORS", "Executor", "SampleOutcome", "SampleSpec", "get_executor"]
