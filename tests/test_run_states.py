"""No run is left in a false state: graph tasks are refused before a run starts (tune and --method leka),
and a run whose driver raises is marked failed (or interrupted) with the reason."""
from __future__ import annotations

import pytest

from leka.agent import Policy, TraceStore, drive
from leka.cli.main import main

from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context
from test_agent_graph import FULL_SCRIPT

GRAPH_TASK = "l3-mbv2-ir-56x24-s1"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_tune_refuses_a_graph_task_in_one_line(home, capsys):
    assert main(["tune", GRAPH_TASK]) == 2
    err = capsys.readouterr().err
    model = home / "models" / f"{GRAPH_TASK}.onnx"
    assert f"graph task: tune it per fused kernel with `leka optimize {model} --target host-cpu`" in err
    assert len(err.strip().splitlines()) == 1 and model.stat().st_size > 0  # the file the command names
    assert not (home / "agent.sqlite").exists() or TraceStore().list_runs() == []


def test_method_leka_does_not_apply_to_graph_tasks():
    from leka.methods import get_method
    from leka.tasks import get_task

    method = get_method("leka", {})
    assert "leka optimize" in method.applies(get_task(GRAPH_TASK), None)
    assert method.applies(get_task("ex-matmul-256"), None) is None


class _Boom:
    """A progress display that breaks after the first step (any failure inside the driven run)."""

    def __init__(self, exc: BaseException):
        self.exc = exc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def update(self, node, update):
        if update.get("steps"):
            raise self.exc


@pytest.mark.parametrize("exc, status", [(RuntimeError("disk full\nmore"), "failed"),
                                         (KeyboardInterrupt(), "interrupted")])
def test_a_run_that_raises_is_not_left_running(home, capsys, exc, status):
    store = TraceStore()
    ctx = make_context("r-boom", store, ScriptedProposer(FULL_SCRIPT), FakeEvaluator())
    with pytest.raises(type(exc)):
        drive(ctx, store, policy=Policy(k=2), progress=_Boom(exc))
    run = store.get_run("r-boom")
    assert run["status"] == status
    if status == "failed":
        assert run["final"]["error"] == "RuntimeError: disk full"
    store.close()
    assert main(["trace", "r-boom", "--plain"]) == 0
    assert f"run {status}:" in capsys.readouterr().out


def test_a_bench_run_that_raises_ends_with_a_failed_event(tmp_path):
    from leka.bench.runner import run_benchmark
    from leka.bench.store import ResultStore
    from leka.tasks import get_task

    class _Exploding:
        name = "boom"

        def run(self, task, target, ctx):
            raise KeyboardInterrupt

    class _Target:
        name, facts = "host-cpu", {}

    store = ResultStore(tmp_path / "r.sqlite")
    rid = store.create_run("boom", "host-cpu", {"options": {}})
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(store, rid, [get_task("ex-matmul-256")], _Target(), _Exploding(), 1, None, None, {})
    assert store.get_run(rid)["status"] == "interrupted"


@pytest.mark.slow
def test_sigterm_marks_a_tune_run_interrupted(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    env = dict(os.environ, LEKA_HOME=str(tmp_path / "home"))
    exe = str(Path(sys.executable).with_name("leka"))
    proc = subprocess.Popen([exe, "tune", "ex-matmul-256", "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    db = tmp_path / "home" / "agent.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (db.exists() and TraceStore(db).list_runs()):
        time.sleep(0.5)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert TraceStore(db).list_runs()[0]["status"] == "interrupted"
