"""One accountant: every model call is charged when it is made, whether its step succeeds or not, and no
call goes out past `calls=N` (the agent's proposer steps run in a forked child: what the child spent
must reach the run's budget even when the step fails)."""
from __future__ import annotations

import json

from fake_servers import FakeLLMServer

from leka.cli.main import main

GARBAGE = "Sure! Here is a great schedule for your kernel: make it fast."


def test_failed_model_calls_are_charged_and_none_passes_the_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    with FakeLLMServer("compat", default_text=GARBAGE, lifetime_s=300) as srv:
        rc = main(["tune", "ex-matmul-256", "--llm", "compat:tiny", "--base-url", srv.url + "/v1",
                   "--budget", "calls=3,compiles=3,measurements=3", "--layers", "schedule", "--trials", "2",
                   "--json", "--quiet"])
        sent = srv.count
    final = json.loads(capsys.readouterr().out)
    assert rc in (0, 1)
    # step 1: reply + one feedback call, both garbage; step 2: one call, then the budget refuses the next
    assert sent == 3, f"{sent} model calls went out under calls=3"
    assert final["budget_spent"]["calls"] == 3
    assert final["budget_spent"]["tokens"] > 0
