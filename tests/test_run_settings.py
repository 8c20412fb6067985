"""A stored run is continued only under the settings it was made with (method options, budget, proposer,
code version); otherwise it is refused in one line (a rerun with a larger budget must not silently
return the earlier, smaller run's results)."""
from __future__ import annotations

import pytest

from leka.bench.runner import SettingsMismatch, check_resumable, settings_mismatch
from leka.bench.store import ResultStore
from leka.budget import Budget


class _Method:
    name = "leka"


def _store(tmp_path, options, budget):
    store = ResultStore(tmp_path / "r.sqlite")
    rid = store.create_run("leka", "host-cpu", {"options": options, "budget": budget}, {"leka": "0.1.0"})
    return store, rid


def test_same_settings_resume(tmp_path):
    store, rid = _store(tmp_path, {"k": 2}, "compiles=10")
    check_resumable(store, rid, _Method(), {"k": 2}, Budget.parse("compiles=10"))


@pytest.mark.parametrize("options, budget, expect", [
    ({"k": 2}, "compiles=64,measurements=64", "budget compiles: 10.0 stored, 64.0 now"),
    ({"k": 2, "llm": "openai:gpt-x"}, "compiles=10", "options llm: None stored, 'openai:gpt-x' now"),
])
def test_other_settings_are_refused_in_one_line(tmp_path, options, budget, expect):
    store, rid = _store(tmp_path, {"k": 2}, "compiles=10")
    with pytest.raises(SettingsMismatch) as e:
        check_resumable(store, rid, _Method(), options, Budget.parse(budget))
    msg = str(e.value)
    assert expect in msg and "\n" not in msg and rid in msg


def test_code_version_is_part_of_the_settings():
    assert "versions leka" in settings_mismatch({"versions": {"leka": "0.1.0"}}, {"versions": {"leka": "0.2.0"}})
    assert settings_mismatch({"options": {}}, {"budget": {"compiles": 3}}) is None  # keys absent on one side


def test_method_leka_refuses_to_reuse_an_agent_run_made_with_other_options(tmp_path, monkeypatch):
    from leka.agent import Policy, TraceStore, drive
    from leka.methods import MethodContext, get_method
    from leka.tasks import get_task

    from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context

    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    task = get_task("ex-matmul-256")
    store = TraceStore()
    ctx = make_context(f"b1.{task.id}.0", store, ScriptedProposer({}), FakeEvaluator())
    drive(ctx, store, policy=Policy(), options={"bench_run": "b1", "method_options": {"agent_budget": "compiles=10"}})
    store.close()
    method = get_method("leka", {"agent_budget": "compiles=64,measurements=64"})
    mctx = MethodContext(evaluator=None, budget=Budget.unlimited(), store=None, run_id="b1", options={})
    with pytest.raises(SettingsMismatch, match="agent_budget: 'compiles=10' stored, 'compiles=64,measurements=64'"):
        method.run(task, None, mctx)
