"""The second ring of the trust boundary (issue 21): files the tool reads back are input too. Each test is one
case of the issue's "Why", in the corpus style of tests/adversarial (README, "Second ring"): what the hostile
file tries, and what must happen: a one-line error with exit 2, or a recorded failure; no code of it runs, no
connection leaves, nothing unverified is stored.

This module: stored runs (`bench run --resume`, `tune --resume`, `remote ingest`, `trace --export`) never
widen what runs. Remote results: test_remote_judged.py; artifacts and the tuning db: test_artifact_trust.py."""
from __future__ import annotations

import select
import socket
from pathlib import Path

import pytest

from leka.agent import Policy, TraceStore, drive
from leka.agent.session import TuneOptions
from leka.bench.store import ResultStore
from leka.cli.main import main

from one_line import one_line_error
from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context

TINY = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture()
def hostile_folder(tmp_path):
    """A task folder whose import writes a marker: importing it is running the store's code."""
    d = tmp_path / "hostile_tasks"
    d.mkdir()
    marker = tmp_path / "MARKER"
    (d / "evil.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nTASKS = []\n")
    return d, marker


@pytest.fixture()
def listener():
    """A server the store names: a connection to it means the resume contacted a stored URL."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    yield s, f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()




def _bench_run(db: Path, config: dict, method: str = "tvm-naive") -> str:
    cfg = {"task_ids": ["benchtest-add-64"], "task_paths": [], "target_spec": "host-cpu", "samples": 1,
           "options": {}, "budget": "", "trials": 1, "measure": False, **config}
    return ResultStore(db).create_run(method, "host-cpu", cfg)


# -- bench run --resume ---------------------------------------------------------------------------------------
def test_bench_resume_never_imports_a_stored_task_folder(home, capsys, hostile_folder):
    """attack: an edited results store names a task folder; expect: exit 2 naming --tasks, the folder not imported."""
    folder, marker = hostile_folder
    rid = _bench_run(home / "r.sqlite", {"task_paths": [str(folder)]})
    assert main(["bench", "run", "--resume", rid, "--store", str(home / "r.sqlite"), "--quiet"]) == 2
    one_line_error(capsys, "--tasks", "never widens")
    assert not marker.exists()


def test_bench_resume_never_sends_to_a_stored_server(home, capsys, listener):
    """attack: the stored options name a proposer server; expect: exit 2 naming the option, no connection."""
    sock, url = listener
    rid = _bench_run(home / "r.sqlite", {"options": {"llm": "compat:m", "base_url": url}}, method="leka")
    argv = ["bench", "run", "--resume", rid, "--store", str(home / "r.sqlite"), "--quiet"]
    assert main(argv) == 2
    one_line_error(capsys, "--option llm")
    assert main([*argv, "--option", "llm=compat:m"]) == 2  # the provider given, the server differs
    one_line_error(capsys, "--option base_url", url)
    assert not select.select([sock], [], [], 0.2)[0]


def test_bench_resume_with_the_same_folders_goes_on(home, capsys):
    """honest sibling: the folders given again as at the start: the run resumes (here: nothing left to do)."""
    db = str(home / "r.sqlite")
    run = ["bench", "run", "--method", "tvm-naive", "--tasks", TINY, "--task", "benchtest-add-64", "--trials", "1",
           "--no-measure", "--quiet", "--store", db]
    assert main(run) == 0
    rid = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["bench", "run", "--resume", rid, "--tasks", TINY, "--store", db, "--quiet"]) == 0
    assert "(1 already done)" in capsys.readouterr().err
    assert main(["bench", "run", "--resume", rid, "--store", db, "--quiet"]) == 2  # not given: refused
    one_line_error(capsys, "--tasks")


# -- tune --resume, remote ingest, trace --export ---------------------------------------------------------------
def _stored_tune_run(run_id: str, **opts) -> None:
    store = TraceStore()
    ctx = make_context(run_id, store, ScriptedProposer({}), FakeEvaluator())
    tune = TuneOptions(task_id="ex-matmul-256", **opts).to_json()
    drive(ctx, store, policy=Policy(max_steps=1), options={"tune": tune})
    store.close()


def test_tune_resume_never_imports_a_stored_task_folder(home, capsys, hostile_folder):
    """attack: an edited agent store names a task folder; expect: exit 2 naming --tasks, nothing imported."""
    folder, marker = hostile_folder
    _stored_tune_run("t-evil", tasks_paths=[str(folder)])
    assert main(["tune", "--resume", "t-evil", "--quiet"]) == 2
    one_line_error(capsys, "--tasks")
    assert main(["trace", "t-evil", "--export", str(home / "out")]) == 2  # the same folder through an export
    one_line_error(capsys, "--tasks")
    assert not marker.exists()


def test_tune_resume_never_sends_the_key_to_a_stored_server(home, capsys, listener, monkeypatch):
    """attack: the stored run names a server for the user's API key; expect: exit 2 naming --base-url."""
    sock, url = listener
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    _stored_tune_run("t-url", llm="compat:m", base_url=url)
    assert main(["tune", "--resume", "t-url", "--llm", "compat:m", "--quiet"]) == 2
    one_line_error(capsys, "--base-url", url)
    assert not select.select([sock], [], [], 0.2)[0]


def test_remote_ingest_resumes_only_what_the_command_line_names(home, listener):
    """attack: a pending store's run names a server; expect: the resume refused (naming --base-url) before any
    run goes on."""
    from leka.errors import LekaError
    from leka.remote import loop
    from leka.remote.pending import PendingStore

    sock, url = listener
    store = PendingStore(home / "pending.sqlite")
    store.set_run("r-url", {"tune": TuneOptions(task_id="ex-matmul-256", llm="compat:m", base_url=url).to_json()},
                  "pending")
    with pytest.raises(LekaError, match="--llm"):
        loop.resume_all(store)
    with pytest.raises(LekaError, match="--base-url"):
        loop.resume_all(store, {"llm": "compat:m"})
    assert not select.select([sock], [], [], 0.2)[0]
