"""`leka trace` and `leka tune` argument handling (runs made with the test doubles; no TVM work)."""
from __future__ import annotations

import json

import pytest

from leka.agent import Policy, TraceStore, drive
from leka.cli.main import main

from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context
from test_agent_graph import FULL_SCRIPT


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _make_run(home, run_id="cli-run"):
    store = TraceStore()
    ctx = make_context(run_id, store, ScriptedProposer(FULL_SCRIPT), FakeEvaluator())
    drive(ctx, store, policy=Policy(k=2), options={"note": "test"})
    store.close()


def test_trace_attributes_gains_to_each_layer(home, capsys):
    _make_run(home)
    assert main(["trace", "cli-run", "--json", "--steps"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_layer = out["contributions"]["by_layer"]
    assert by_layer["algorithm"] == pytest.approx(2.02) and by_layer["schedule"] == pytest.approx(3.0)
    assert by_layer["memory"] == pytest.approx(1.5)
    assert [p["layer"] for p in out["contributions"]["path"]] == ["algorithm", "algorithm", "schedule", "memory"]
    assert out["run"]["final"]["correct"] is True and len(out["steps"]) == 9
    assert main(["trace", "cli-run"]) == 0
    table = capsys.readouterr().out
    assert "by layer (in the final kernel): algorithm 2.02x  schedule 3.00x  memory 1.50x" in table
    assert "memory=[m_fast]" in table  # summaries are printed literally, not read as rich markup


def test_trace_list_and_unknown_run(home, capsys):
    _make_run(home)
    assert main(["trace", "--list", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["cli-run"]
    assert main(["trace", "nope"]) == 2
    assert "no LEKA run 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["tune", "ex-matmul-256", "--budget", "cals=3"], "unknown budget key 'cals'"),
    (["tune", "ex-matmul-256", "-k", "0"], "-k must be >= 1"),
    (["tune"], "give a TASK_ID, or --resume RUN"),
    (["tune", "ex-matmul-256", "--resume", "r1"], "drop TASK_ID"),
])
def test_tune_bad_input_is_one_line(home, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_tune_resume_unknown_run(home, capsys):
    _make_run(home)  # the trace db exists, the run does not
    assert main(["tune", "--resume", "missing-run"]) == 2
    assert "no LEKA run 'missing-run'" in capsys.readouterr().err


@pytest.mark.slow
def test_tune_json_with_offline_proposer(tmp_path):
    """The real thing, small: offline proposer, real IR and evaluator, a 3-compile budget."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, LEKA_HOME=str(tmp_path / "home"))
    leka = str(Path(sys.executable).with_name("leka"))
    p = subprocess.run([leka, "tune", "ex-matmul-256", "--budget", "compiles=3", "--trials", "2", "--json"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "proposer leka-offline-rules (offline, no LLM)" in p.stderr
    rec = json.loads(p.stdout)
    for key in ("run_id", "task", "target", "correct", "speedup", "baseline", "candidate_ms", "baseline_ms",
                "budget_spent", "proposer", "contributions"):
        assert key in rec
    assert rec["correct"] and rec["budget_spent"]["compiles"] <= 3 and rec["stop_reason"].startswith("budget")
    assert rec["contributions"]["by_layer"]["schedule"] > 1.0
    t = subprocess.run([leka, "trace", rec["run_id"], "--json"], capture_output=True, text=True, env=env)
    assert json.loads(t.stdout)["run"]["status"] == "done"


def test_tune_resume_refuses_a_bench_run(home, capsys):
    store = TraceStore()
    ctx = make_context("bench.t.0", store, ScriptedProposer({}), FakeEvaluator())
    drive(ctx, store, policy=Policy(), options={"bench_run": "b1"})
    store.close()
    assert main(["tune", "--resume", "bench.t.0"]) == 2
    assert "leka bench run --resume" in capsys.readouterr().err
