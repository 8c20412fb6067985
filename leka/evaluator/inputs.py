"""Inputs and reference outputs of one evaluation, made in the evaluating process from trusted task code.

Every evaluation gets its own seed (a fresh 63-bit random number unless EvalConfig.seed pins one), so a
candidate cannot recognise the inputs of earlier evaluations and write stored answers. Each trial draws from
its own stream of that seed (SeedSequence spawn keys), so a replay with the same seed reproduces the same
arrays whatever else the configuration adds: correctness trials (key 0, i), held-back trials (key 1, i),
the timing loop's inputs (key 2, 0) and the worker's output fill (key 3, 0).
"""
from __future__ import annotations

import secrets
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from leka.tasks.task import Task

from .config import EvalConfig

HELD_BACK = "held-back"  # the trial label shown for held-back inputs (the family's name stays hidden)


@dataclass
class Trial:
    label: str  # the distribution, or HELD_BACK
    inputs: list[np.ndarray]
    refs: list[np.ndarray]
    ties: list[np.ndarray | None]  # per output: where +-1 is allowed (Task.tie_masks)

    @property
    def held_back(self) -> bool:
        return self.label == HELD_BACK


@dataclass
class TrialSet:
    seed: int
    trials: list[Trial]  # correctness trials, held-back ones last
    timing: Trial | None  # the timing loop's own inputs (None when the evaluation does not measure)
    fill_seed: int = 0  # the worker's garbage fill of output buffers


def fresh_seed() -> int:
    return secrets.randbits(63)


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _trial(task: Task, rng: np.random.Generator, dist: str, label: str) -> Trial:
    ins = task.generate_inputs(rng, dist)
    refs = task.run_reference([a.copy() for a in ins])
    return Trial(label, ins, refs, task.tie_masks(ins))


def make_trials(task: Task, cfg: EvalConfig, seed: int, holdout: bool, measure: bool) -> TrialSet:
    n = cfg.trials_for(sum(a.nbytes for a in task.args))
    trials = [_trial(task, _rng(seed, 0, i), d, d)
              for i, d in enumerate(cfg.dists[i % len(cfg.dists)] for i in range(n))]
    if holdout:  # (a family the task declares it cannot take keeps its stream index: the others replay alike)
        trials += [_trial(task, _rng(seed, 1, i), d, HELD_BACK) for i, d in enumerate(cfg.holdout_dists)
                   if d not in task.holdout_skip]
    timing = _trial(task, _rng(seed, 2, 0), cfg.dists[0], cfg.dists[0]) if measure else None
    return TrialSet(seed, trials, timing, fill_seed=int(_rng(seed, 3, 0).integers(0, 2**62)))


class InputSource:
    """Makes each evaluation's TrialSet on a helper thread, so the reference computation overlaps the
    worker's compile of the same candidate instead of adding to the evaluation's overhead. When a task is
    evaluated again and again (a search), the next evaluation's set is started as soon as one finishes (a new
    seed, drawn then and used once), overlapping the method's own work between evaluations. A single helper
    thread runs these in order, and every evaluation waits for its own set before running the candidate, so no
    reference work runs during a timing loop. Under a pinned seed the set is made once (the same inputs by
    definition)."""

    def __init__(self, cfg: EvalConfig):
        self.cfg = cfg
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leka-inputs")
        self._pinned: dict[tuple[str, bool, bool], TrialSet] = {}
        self._next: tuple[tuple[str, bool, bool], int, Future[TrialSet]] | None = None
        self._last: tuple[str, bool, bool] | None = None
        self._repeats = 0  # consecutive evaluations of the same (task, holdout, measure)

    def start(self, task: Task, holdout: bool, measure: bool) -> tuple[int, "Future[TrialSet]"]:
        """(seed, the TrialSet being made) for one evaluation."""
        key = (task.id, holdout, measure)
        self._repeats = self._repeats + 1 if key == self._last else 1
        self._last = key
        if self.cfg.seed is not None:
            done: Future[TrialSet] = Future()
            if key not in self._pinned:
                self._pinned = {key: make_trials(task, self.cfg, self.cfg.seed, holdout, measure)}
            done.set_result(self._pinned[key])
            return self.cfg.seed, done
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] == key:
            return ahead[1], ahead[2]
        return self._submit(task, holdout, measure)

    def prefetch(self, task: Task, holdout: bool, measure: bool) -> None:
        """After an evaluation: start the next one's set if this task is being evaluated repeatedly."""
        if self.cfg.seed is None and self._repeats >= 2 and self._next is None:
            seed, fut = self._submit(task, holdout, measure)
            self._next = ((task.id, holdout, measure), seed, fut)

    def _submit(self, task: Task, holdout: bool, measure: bool) -> tuple[int, "Future[TrialSet]"]:
        seed = fresh_seed()
        return seed, self._pool.submit(make_trials, task, self.cfg, seed, holdout, measure)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
