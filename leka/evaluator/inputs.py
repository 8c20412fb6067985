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
    trials = [_trial(task, _rng(seed, 0, i), d, d)
              for i, d in enumerate(cfg.dists[i % len(cfg.dists)] for i in range(cfg.trials))]
    if holdout:
        trials += [_trial(task, _rng(seed, 1, i), d, HELD_BACK) for i, d in enumerate(cfg.holdout_dists)]
    timing = _trial(task, _rng(seed, 2, 0), cfg.dists[0], cfg.dists[0]) if measure else None
    return TrialSet(seed, trials, timing, fill_seed=int(_rng(seed, 3, 0).integers(0, 2**62)))


class InputSource:
    """Makes each evaluation's TrialSet on a helper thread, so the reference computation overlaps the
    worker's compile of the same candidate instead of adding to the evaluation's overhead. Nothing is made
    before its evaluation starts and nothing is reused across evaluations, except under a pinned seed (the
    same inputs by definition)."""

    def __init__(self, cfg: EvalConfig):
        self.cfg = cfg
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leka-inputs")
        self._pinned: dict[tuple[str, bool, bool], TrialSet] = {}

    def start(self, task: Task, holdout: bool, measure: bool) -> tuple[int, "Future[TrialSet]"]:
        """(seed, the TrialSet being made) for one evaluation."""
        seed = self.cfg.seed
        if seed is None:
            seed = fresh_seed()
            return seed, self._pool.submit(make_trials, task, self.cfg, seed, holdout, measure)
        key = (task.id, holdout, measure)
        done: Future[TrialSet] = Future()
        if key not in self._pinned:
            self._pinned = {key: make_trials(task, self.cfg, seed, holdout, measure)}
        done.set_result(self._pinned[key])
        return seed, done

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
