"""One grammar for every `leka` subcommand (leka/cli/grammar.py), checked on the argparse tree itself, so a
new subcommand is walked without being listed: each has --json and, run for real where that is cheap, prints
JSON that parses; -o is --out PATH everywhere; --resume takes an optional RUN; the timing options say their
unit; every command that can use a model takes --llm; bad arguments exit 2."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from leka.bench.store import ResultStore
from leka.cli.grammar import LATEST
from leka.cli.main import build_parser, main


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for a in subs:
        for name, p in a.choices.items():
            yield from _leaves(p, path + (name,))


LEAVES = dict(_leaves(build_parser()))
MODEL_COMMANDS = {("tune",), ("optimize",), ("demo",), ("bench", "run"), ("experiment", "run"), ("remote", "tune"),
                  ("remote", "ingest")}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def _name(path: tuple[str, ...]) -> str:
    return " ".join(path)


def test_the_tree_is_walked():
    assert len(LEAVES) >= 20 and ("bench", "report") in LEAVES and ("remote", "status") in LEAVES


@pytest.mark.parametrize("path", sorted(LEAVES), ids=_name)
def test_every_command_reports_as_json_on_request(path):
    assert "--json" in _options(LEAVES[path]), f"leka {_name(path)} has no --json"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=_name)
def test_o_is_out_path_wherever_it_appears(path):
    opts = _options(LEAVES[path])
    for flag in ("-o", "--out", "--output"):
        if flag in opts:
            a = opts[flag]
            assert {"-o", "--out"} <= set(a.option_strings) and a.dest == "out" and a.metavar == "PATH", (path, flag)


@pytest.mark.parametrize("path", sorted(LEAVES), ids=_name)
def test_resume_takes_an_optional_run_and_timing_says_its_unit(path):
    opts = _options(LEAVES[path])
    if "--resume" in opts:
        assert opts["--resume"].nargs == "?" and opts["--resume"].const is LATEST, path
    if "--time" in opts:  # only as a deprecated spelling, hidden from --help
        assert opts["--time"].help == argparse.SUPPRESS and opts["--time"].dest in ("time_s", "time_runs"), path


@pytest.mark.parametrize("path", sorted(MODEL_COMMANDS), ids=_name)
def test_model_commands_take_llm(path):
    opts = _options(LEAVES[path])
    assert "--llm" in opts and "--base-url" in opts, path


def test_old_time_spelling_warns_in_one_line_and_keeps_its_meaning(capsys):
    p = build_parser()
    assert p.parse_args(["run", "art", "--check", "--time", "3"]).time_runs == 3
    assert p.parse_args(["optimize", "m.onnx", "--time", "0.5"]).time_s == 0.5
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["leka: warning: --time is deprecated; use --time-runs",
                   "leka: warning: --time is deprecated; use --time-s"]
    assert p.parse_args(["tune", "t", "--output", "k.py"]).out == "k.py"  # old spellings still mean -o
    assert p.parse_args(["trace", "r", "--export", "d"]).out == "d"
    assert p.parse_args(["bench", "run", "--resume"]).resume is LATEST
    assert p.parse_args(["bench", "run", "--resume", "r1"]).resume == "r1"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=_name)
def test_bad_arguments_exit_2(path, capsys):
    with pytest.raises(SystemExit) as e:
        main([*path, "--no-such-option"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("leka") and ": error: " in err, err


# --- the cheap commands, run for real: stdout is JSON ------------------------------------------------------

@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    return tmp_path


def _tiny_store(path: Path) -> list[str]:
    st = ResultStore(path)
    ids = []
    for method, sp in (("tvm-dlight", 1.5), ("leka", 2.0)):
        rid = st.create_run(method, "host-cpu", {"target_spec": "host-cpu"})
        for i, task in enumerate(["l1-a-task", "l1-b-task"]):
            st.add_sample(rid, {"task": task, "target": "host-cpu", "method": method, "sample_idx": 0,
                                "compiled": True, "correct": True, "failure": None, "speedup": sp + i,
                                "candidate_ms": 1.0, "baseline_ms": sp + i, "baseline": "tvm-naive", "level": 1,
                                "domain": "vision", "compile_s": 0.2, "source": "# kernel"})
        st.add_event(rid, "finished")
        ids.append(rid)
    st.close()
    return ids


def _json_of(argv: list[str], capsys) -> object:
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 0, (argv, out)
    return json.loads(out)


def test_store_commands_print_json(home, capsys):
    db = home / "r.sqlite"
    a, b = _tiny_store(db)
    store = ["--store", str(db)]
    assert [r["run_id"] for r in _json_of(["bench", "runs", "--json", *store], capsys)] == [a, b]
    rep = _json_of(["bench", "report", a, "--json", "-o", str(home / "rep"), *store], capsys)
    assert rep["md"] == str(home / "rep" / "report.md") and (home / "rep" / "report.html").exists()
    assert rep["summary"][a]["correct_at_1"] == 1.0
    cmp = _json_of(["bench", "compare", a, b, "--json", *store], capsys)
    assert [r[0] for r in cmp["summary"]] == [a, b]
    assert len(_json_of(["bench", "export", a, "--json", *store], capsys)) == 2
    exp = _json_of(["bench", "export", a, "--json", "-o", str(home / "s.jsonl"), *store], capsys)
    assert exp["samples"] == 2 and len((home / "s.jsonl").read_text().splitlines()) == 2


def test_other_cheap_commands_print_json(home, capsys):
    assert {p["name"] for p in _json_of(["targets", "--json"], capsys)} >= {"host-cpu", "cuda"}
    assert _json_of(["llm", "status", "--json"], capsys) == []  # a fresh LEKA_HOME: no server of this test's
    assert _json_of(["llm", "stop", "--json"], capsys) == []
    st = _json_of(["remote", "--store", str(home / "p.sqlite"), "status", "--json"], capsys)
    assert st == {"runs": [], "rounds": [], "open": 0}
    assert _json_of(["bench", "list", "--json", "--limit", "2"], capsys)[0]["id"]


def test_trace_prints_json_and_writes_to_o(home, capsys):
    from leka.agent import Policy, TraceStore, drive

    from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context
    from test_agent_graph import FULL_SCRIPT

    store = TraceStore()
    drive(make_context("g-run", store, ScriptedProposer(FULL_SCRIPT), FakeEvaluator()), store, policy=Policy(k=2))
    store.close()
    assert _json_of(["trace", "g-run", "--json"], capsys)["run"]["run_id"] == "g-run"
    assert [r["run_id"] for r in _json_of(["trace", "--list", "--json"], capsys)] == ["g-run"]


def test_a_bare_resume_finds_the_latest_unfinished_run(home, capsys):
    db = home / "r.sqlite"
    _tiny_store(db)  # both finished
    assert main(["bench", "run", "--resume", "--store", str(db)]) == 2
    assert "no unfinished bench run to resume here" in capsys.readouterr().err


def test_a_bare_tune_resume_is_the_newest_unfinished_run(home):
    from leka.agent.trace import TraceStore
    from leka.cli.tune_cmd import _resume_id
    from leka.errors import LekaError

    s = TraceStore()
    with pytest.raises(LekaError, match="no unfinished LEKA run"):
        _resume_id(LATEST)
    s.create_run("r-interrupted", "t", "host-cpu", "p", {})
    s.set_status("r-interrupted", "interrupted")
    s.create_run("r-bench", "t", "host-cpu", "p", {"bench_run": "b1"})  # bench run's: `bench run --resume`
    s.create_run("r-done", "t", "host-cpu", "p", {})
    s.set_status("r-done", "done", {"correct": True})
    s.close()
    assert _resume_id(LATEST) == "r-interrupted" and _resume_id("r-d") == "r-d"


def test_a_bare_experiment_resume_writes_into_its_newest_folder(tmp_path, monkeypatch):
    import os
    from types import SimpleNamespace

    from leka.cli.experiment_cmd import _out_folder

    monkeypatch.chdir(tmp_path)
    for i, name in enumerate(["abl-20261201-010101", "abl-20261202-010101", "other-20261203-010101"]):
        d = tmp_path / "experiments" / "results" / name
        d.mkdir(parents=True)
        os.utime(d, (1000 + i, 1000 + i))
    ns = SimpleNamespace
    assert _out_folder(ns(out=None, resume=LATEST), "abl") == Path("experiments/results/abl-20261202-010101")
    assert _out_folder(ns(out=None, resume="x/y"), "abl") == Path("x/y")
    assert _out_folder(ns(out="x/y", resume=None), "abl") == Path("x/y")
    assert _out_folder(ns(out=None, resume=None), "abl").name.startswith("abl-")  # a fresh folder


def test_help_states_the_grammar_once(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for option in ("-o, --out PATH", "--resume [RUN]", "--json", "--llm PROVIDER:MODEL", "--time-runs N",
                   "--time-s S"):
        assert option in out, option
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "## Command-line grammar" in readme and "`--time-runs N` / `--time-s S`" in readme


def test_a_file_after_a_bare_resume_is_the_commands_file(tmp_path, capsys):
    """`leka optimize --resume m.onnx` was written when --resume was a switch: m.onnx stays the model."""
    from leka.cli.grammar import file_before_resume

    model = tmp_path / "m.onnx"
    model.write_bytes(b"x")
    args = build_parser().parse_args(["optimize", "--resume", str(model)])
    file_before_resume(args, "model", "the ONNX model file")
    assert (args.model, args.resume) == (str(model), LATEST)
    assert main(["optimize", "--resume", "opt-123"]) == 2  # no model at all: one line
    assert capsys.readouterr().err.strip() == "leka: error: give MODEL, the ONNX model file (or --list-ops)"
    assert main(["experiment", "run"]) == 2
