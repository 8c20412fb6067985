"""`leka bench list|stats|report|export` and the run loop on tiny user tasks."""
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from leka.bench.store import ResultStore
from leka.cli.main import main

TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")


def test_list_json_fields(capsys):
    assert main(["bench", "list", "--json", "--level", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all({"id", "pattern", "level", "domain", "dtype", "flops", "bytes"} <= set(r) for r in rows)
    assert {r["level"] for r in rows} == {3}


def test_stats_json_counts_and_l3_size(capsys):
    assert main(["bench", "stats", "--json", "--level", "3"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert isinstance(s["patterns"], int) and isinstance(s["workloads"], int)
    assert s["patterns"] >= 10 and s["workloads"] >= 15  # the L3 part of the issue
    assert sum(s["domains"].values()) == s["workloads"] == sum(s["levels"].values()) == sum(s["dtypes"].values())


def test_bad_filters_are_one_line_errors(capsys):
    assert main(["bench", "list", "--domain", "astrology"]) == 2
    assert "domains are" in capsys.readouterr().err
    assert main(["bench", "run", "--method", "nope", "--tasks", TASKS, "--store", "/tmp/x-never.sqlite"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.tables = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs.append(dict(attrs)["src"])
        self.tables += tag == "table"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("bench") / "r.sqlite"
    rc = main(["bench", "run", "--method", "tvm-dlight", "--tasks", TASKS, "--pattern", "benchtest", "--samples", "2",
               "--trials", "2", "--quiet", "--store", str(db)])
    assert rc == 0
    st = ResultStore(db)
    return db, st.list_runs()[-1]["run_id"]


def test_run_records_carry_required_fields(finished_run):
    db, run_id = finished_run
    recs = ResultStore(db).samples(run_id)
    assert len(recs) == 4
    for r in recs:
        for key in ("task", "workload", "target", "method", "candidate_hash", "correct", "failure", "candidate_ms",
                    "spread", "baseline", "budget", "versions", "sample_idx"):
            assert key in r, key
        assert r["correct"] is True, (r["task"], r["failure"], r.get("error"))
        assert r["baseline"].startswith("tvm-naive")
        assert {"tvm", "llvm", "leka"} <= set(r["versions"])
    by_task = {r["task"]: r["meta"]["schedule"] for r in recs}
    assert by_task["benchtest-add-64"].startswith("dlight: no rule applies")  # elementwise: no CPU rule
    assert by_task["benchtest-gemv-32x64"] == "dlight"  # a GEMV: dl.cpu.GEMV applies


def test_report_and_export(finished_run, tmp_path, capsys):
    db, run_id = finished_run
    assert main(["bench", "report", run_id, "--out", str(tmp_path), "--store", str(db)]) == 0
    md = (tmp_path / "report.md").read_text()
    assert "Fast@1.0 vs tvm-naive" in md and "Correct@2" in md
    p = _Collect()
    p.feed((tmp_path / "report.html").read_text())
    assert len(p.imgs) == 3 and all(s.startswith("data:image/png;base64,iVBOR") for s in p.imgs)
    assert p.tables >= 4
    capsys.readouterr()
    assert main(["bench", "runs", "--json", "--store", str(db)]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"], r["samples"]) for r in runs] == [(run_id, "finished", 4)]
    assert main(["bench", "export", run_id, "--format", "jsonl", "--store", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["run_id"] == run_id


def test_budget_stops_run_cleanly(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    rc = main(["bench", "run", "--method", "tvm-naive", "--tasks", TASKS, "--pattern", "benchtest", "--samples", "2",
               "--trials", "1", "--no-measure", "--budget", "compiles=1", "--quiet", "--store", str(db), "--json"])
    assert rc == 4  # ExitCode.BUDGET: the budget ran out first
    out = capsys.readouterr()
    assert "stopped early (budget" in out.err
    said = json.loads(out.out)  # --json: the run's summary alone on stdout
    assert said["stopped"].startswith("budget") and said["new_samples"] == 1 and said["summary"]["samples"] == 1
    st = ResultStore(db)
    run = st.get_run(st.list_runs()[-1]["run_id"])
    assert run["status"] == "budget_exhausted" and len(st.samples(run["run_id"])) == 1


def test_validate_exit_codes(capsys):
    ok = main(["bench", "validate", "--tasks", TASKS, "--pattern", "benchtest", "--trials", "1"])
    bad_tasks = str(Path(__file__).parent / "data" / "bench_bad_task.py")
    bad = main(["bench", "validate", "--tasks", bad_tasks, "--pattern", "benchbad", "--trials", "1"])
    out = capsys.readouterr().out
    assert (ok, bad) == (0, 1)
    assert "FAILED benchbad-add-64: wrong" in out and "validated 1 workloads" in out
