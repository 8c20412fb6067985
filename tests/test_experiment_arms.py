"""The per-arm table of an experiment (leka.experiment.arms): what counts as correct and shipped, the
bootstrap interval over tasks, the pick-position histogram and the model line; the model-arms config loads
and builds every arm, with --llm reaching only the arms that take a model."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from leka.experiment.arms import arm_row, geomean_ci, model_line, pick_positions
from leka.experiment.config import check_methods, load_config, method_options
from leka.experiment.runner import PlannedRun

ROOT = Path(__file__).resolve().parents[1]


def _rec(task, speedup=None, correct=True, failure=None, picks=()):
    return {"task": task, "compiled": correct, "correct": correct, "failure": failure, "speedup": speedup,
            "budget": {"calls": 2, "tokens": 100, "minutes": 0.5}, "meta": {"menu_picks": list(picks)},
            "proposer": "local:gemma3-270m"}


def test_failures_ship_the_baseline_and_the_interval_brackets_the_geomean():
    recs = [_rec("a", 4.0), _rec("a", None, False, "no_candidate"), _rec("b", 1.0), _rec("b", 2.0),
            _rec("c", 0.5, True)]
    geo, low, high = geomean_ci(recs)
    # per task: a = mean(log 4, log 1), b = mean(log 1, log 2), c = log 0.5
    want = math.exp((math.log(4) / 2 + math.log(2) / 2 + math.log(0.5)) / 3)
    assert geo == pytest.approx(want) and low <= geo <= high and low < high
    assert geomean_ci(recs) == (geo, low, high)  # seeded: the same report twice


def test_row_counts_correct_made_kernels_and_positions():
    picks = [{"position": 0}, {"position": 0}, {"position": 3}]
    recs = [_rec("a", 2.0, picks=picks), _rec("a", None, False, "no_candidate"), _rec("a", 1.5),
            _rec("b", None, False, "no_candidate"), _rec("b", None, False, "no_candidate"),
            _rec("b", None, False, "no_candidate")]
    row = arm_row("leka", recs)
    assert row["Correct@1"] == pytest.approx((2 / 3 + 0) / 2) and row["Correct@3"] == pytest.approx(0.5)
    assert row["positions"] == {0: 2, 3: 1} and pick_positions(recs)[0] == 2
    assert row["calls"] == 12 and row["tokens"] == 600 and row["minutes"] == pytest.approx(3.0)


def test_model_arms_config_gives_the_model_only_to_model_arms():
    cfg = load_config(ROOT / "experiments" / "configs" / "model_arms_host_cpu.toml")
    check_methods(cfg, "compat:m", "http://127.0.0.1:9/v1")  # every arm builds with a model given
    assert cfg.split == "test" and cfg.samples == 3 and (cfg.limit or 0) >= 12
    opts = {e.label: method_options(e, cfg, "local:gemma3-270m", None) for e in cfg.methods}
    assert {label for label, o in opts.items() if o.get("llm") == "local:gemma3-270m"} == {
        "direct", "codeloop", "leka", "leka-schedule-only", "leka-no-feedback"}
    assert opts["random-pick"].get("llm") is None and opts["offline-agent"]["llm"] == "offline"
    runs = [PlannedRun(f"r.{label}", label, e.method, "host-cpu", "test", o, None)
            for (label, o), e in zip(opts.items(), cfg.methods)]
    assert model_line(runs).startswith("Model: local:gemma3-270m (arms ")
    assert model_line(runs[5:]).startswith("Model: none")
