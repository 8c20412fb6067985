"""The structured held-back families (monotone runs, constant runs, alternating sides of the median): each
keeps its input's domain and dtype, shows its structure from element 0 on, and leaves the suite's
ill-conditioned reductions (1 - cos of neighbouring rows) well conditioned, unlike fully sorted rows."""
from __future__ import annotations

import numpy as np
import pytest

import dataclasses

from leka.evaluator import EvalConfig
from leka.evaluator.inputs import HELD_BACK, make_trials
from leka.tasks import all_tasks, get_task
from leka.tasks.task import HOLDOUT_DISTS, STRUCTURED_DISTS, ArgSpec, generate

SPECS = [
    ArgSpec("X", (64, 640), "float32"),
    ArgSpec("X", (3, 5, 7), "float16"),
    ArgSpec("X", (4000,), "float32", dist="positive"),
    ArgSpec("X", (4000,), "float32", dist="uniform"),
    ArgSpec("X", (4000,), "float32", low=0.0, high=6.0),
    ArgSpec("X", (50, 80), "int8"),
    ArgSpec("X", (2, 3000), "uint8", low=0, high=256),
    ArgSpec("X", (1000,), "int32", low=0, high=10),  # indices
    ArgSpec("X", (3,), "float32"),
    ArgSpec("X", (), "float32"),
]


def _domain_ok(spec: ArgSpec, x: np.ndarray) -> bool:
    if spec.dist == "positive":
        return bool(((x >= 0.1) & (x <= 2.0)).all())
    if spec.dist == "uniform":
        return bool(((x >= -1.0) & (x <= 1.0)).all())
    if np.dtype(spec.dtype).kind in "iu":
        lo = spec.low if spec.low is not None else -128
        hi = spec.high if spec.high is not None else 128
        return bool(((x >= lo) & (x < hi)).all())
    lo = spec.low if spec.low is not None else -np.inf
    hi = spec.high if spec.high is not None else np.inf
    return bool(np.isfinite(x).all() and ((x >= lo) & (x <= hi)).all())


@pytest.mark.parametrize("dist", STRUCTURED_DISTS)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.dtype}{list(s.shape)}{s.dist or ''}{s.low or ''}")
def test_family_keeps_shape_dtype_domain_and_replays(dist, spec):
    x = generate(spec, np.random.default_rng(7), dist)
    assert x.shape == spec.shape and x.dtype == np.dtype(spec.dtype) and x.flags.c_contiguous
    assert _domain_ok(spec, x)
    assert np.array_equal(x, generate(spec, np.random.default_rng(7), dist))
    assert not np.array_equal(x, generate(spec, np.random.default_rng(8), dist)) or x.size < 2


def _flat(dist: str, seed: int, spec: ArgSpec = ArgSpec("X", (40, 250), "float32")) -> np.ndarray:
    return generate(spec, np.random.default_rng(seed), dist).ravel().astype(np.float64)


@pytest.mark.parametrize("seed", range(20))
def test_structure_starts_at_element_zero(seed):
    """A branch keyed on the leading elements meets the structure in every trial."""
    assert (np.diff(_flat("runs", seed)[:8]) > 0).all()  # the first run ascends, 8 long at least
    assert np.ptp(_flat("steps", seed)[:8]) == 0
    alt = _flat("alternating", seed)
    assert (alt[0::2] >= 0).all() and (alt[1::2] <= 0).all()


def test_runs_alternate_direction_and_vary_in_length():
    x = _flat("runs", 3)
    turns = np.flatnonzero(np.diff(np.sign(np.diff(x))) != 0)  # where the direction changes
    lengths = np.diff(turns)
    assert 100 < turns.size < 2000  # runs of ~2..256 over 10,000 elements, not i.i.d. (~6,700 turns)
    assert lengths.max() > 100 and lengths.min() <= 3
    assert abs(x.mean()) < 0.1 and 0.9 < x.std() < 1.1  # unit-variance marginals, like the search's families


def test_steps_hold_values_and_keep_the_marginals():
    x = _flat("steps", 4)
    assert (np.diff(x) == 0).mean() > 0.8
    assert len(np.unique(x)) > 50


def test_held_back_set_holds_the_structured_families():
    assert set(STRUCTURED_DISTS) <= set(HOLDOUT_DISTS)
    assert EvalConfig(holdout_dists=STRUCTURED_DISTS).holdout_dists == STRUCTURED_DISTS
    with pytest.raises(ValueError):
        EvalConfig(dists=("runs",))  # never a search family


def _one_minus_cos(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    n2 = (x * x).sum(1)
    return 1 - (x[:-1] * x[1:]).sum(1) / np.sqrt(n2[:-1] * n2[1:])


def test_runs_keep_neighbouring_rows_apart_unlike_sorted_rows():
    """Why not sort whole rows (76a74db dropped that family): sorted rows of normals are nearly parallel,
    1 - cos falls to ~1e-3 and the float32 naive lowering of the cosine-change task misses the tolerance.
    Runs with per-row boundaries keep 1 - cos of neighbouring rows far from 0."""
    spec = get_task("l1-consecutive_cosine_change-309x640").inputs[0]
    rng = np.random.default_rng(0)
    sorted_rows = np.sort(rng.standard_normal(spec.shape), axis=-1)
    assert _one_minus_cos(sorted_rows).min() < 5e-3
    for dist in STRUCTURED_DISTS:
        assert _one_minus_cos(generate(spec, rng, dist)).min() > 0.05, dist


def test_a_task_declares_the_families_it_cannot_take_with_a_reason():
    base = get_task("ex-dwconv3x3-kws")
    task = dataclasses.replace(base, holdout_skip={"steps": "its definition cannot resolve a zero variance"})
    cfg = EvalConfig(trials=1, dists=("normal",), holdout=True, holdout_dists=("runs", "steps", "alternating"))
    trials = make_trials(task, cfg, seed=5, holdout=True, measure=False).trials
    assert [t.label for t in trials] == ["normal", HELD_BACK, HELD_BACK]  # 'steps' left out for this task alone
    full = make_trials(base, cfg, seed=5, holdout=True, measure=False).trials
    assert len(full) == 4 and np.array_equal(full[3].inputs[0], trials[2].inputs[0])  # the others replay alike
    with pytest.raises(ValueError, match="holdout_skip"):
        dataclasses.replace(base, holdout_skip={"sorted": "no such family"})
    with pytest.raises(ValueError, match="holdout_skip"):
        dataclasses.replace(base, holdout_skip={"runs": " "})  # a reason is required
    assert not any(t.holdout_skip for t in all_tasks())  # the suite's definitions take every family
