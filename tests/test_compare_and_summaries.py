"""Runs side by side (`leka bench compare`, `leka bench report A B`), honest summaries (no speedup is
said as such; a missing value is "—", never 0.00x; compile time shown) and `--limit` spread over
domains and patterns."""
from __future__ import annotations

from collections import Counter

import pytest

from leka.bench.store import ResultStore
from leka.cli.main import main


def _rec(task, speedup=None, correct=True, failure=None, idx=0, compile_s=0.5):
    return {"task": task, "target": "host-cpu", "method": "m", "sample_idx": idx, "compiled": failure is None,
            "correct": correct if failure is None else False, "failure": failure, "speedup": speedup,
            "baseline": "tvm-naive" if speedup else None, "compile_s": compile_s}


@pytest.fixture()
def two_runs(tmp_path):
    db = tmp_path / "r.sqlite"
    with ResultStore(db) as store:
        a = store.create_run("tvm-naive", "host-cpu", {})
        for r in (_rec("t-one", 1.0), _rec("t-two", 2.0)):
            store.add_sample(a, dict(r, method="tvm-naive"))
        b = store.create_run("leka", "host-cpu", {})
        for r in (_rec("t-one", 3.0), _rec("t-two", failure="wrong"), _rec("t-three", correct=True)):
            store.add_sample(b, dict(r, method="leka"))
    return db, a, b


def test_compare_prints_runs_side_by_side(two_runs, capsys):
    db, a, b = two_runs
    assert main(["bench", "compare", a, b[:20], "--store", str(db), "--tsv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "t-one\t1.00x\t3.00x\t3.00x" in lines
    assert "t-two\t2.00x\twrong\t—" in lines
    assert "t-three\t—\tcorrect, not timed\t—" in lines
    assert f"B\t{b}\tleka\thost-cpu" in lines  # the run legend, a table like the others
    assert main(["bench", "compare", a, "--store", str(db)]) == 2
    assert "two or more runs" in capsys.readouterr().err


def test_report_of_two_runs_writes_markdown_and_html(two_runs, tmp_path, capsys):
    db, a, b = two_runs
    out = tmp_path / "cmp"
    assert main(["bench", "report", a, b, "--store", str(db), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert "| t-one | 1.00x | 3.00x | 3.00x |" in md and f"leka ({b})" in md
    assert "0.00x" not in md
    html = (out / "compare.html").read_text()
    assert html.count("<tr>") == 2 + 1 + 3 + 1  # two summary rows + head, three task rows + head


def test_single_report_shows_compile_time_and_dash_for_missing(two_runs, tmp_path):
    db, a, b = two_runs
    assert main(["bench", "report", b, "--store", str(db), "--out", str(tmp_path / "one")]) == 0
    md = (tmp_path / "one" / "report.md").read_text()
    assert "median compile time, s (compiled samples) | 0.5 |" in md
    assert "| t-three | 0 | yes | yes | — |" in md and "0.00x" not in md


def _final(speedup):
    return {"run_id": "r", "task": "t", "target": "host-cpu", "correct": True, "compiled": True,
            "speedup": speedup, "baseline": "tvm-naive", "candidate_ms": 1.0, "baseline_ms": speedup,
            "spread": 0.01, "baseline_spread": 0.01, "search_speedup": speedup}


def test_tune_says_when_there_is_no_speedup():
    from leka.cli.tune_cmd import best_line

    assert best_line(_final(0.92)).startswith("no speedup found; the baseline is the answer (best candidate 0.92x")
    assert best_line(_final(3.0)).startswith("best: correct, 3.00x vs tvm-naive")
    assert best_line(dict(_final(3.0), correct=False, failure="wrong", error="mismatch")).startswith("best: NOT")


def test_limit_spreads_over_domains_and_patterns():
    from leka.bench.runner import Selection, select_tasks
    from leka.tasks import all_tasks

    domains = {t.domain for t in all_tasks()}
    picked = select_tasks(Selection(limit=len(domains) * 2))
    assert picked == select_tasks(Selection(limit=len(domains) * 2))  # deterministic
    per_domain = Counter(t.domain for t in picked)
    assert set(per_domain) == domains and max(per_domain.values()) == 2
    vision = select_tasks(Selection(domain="vision", limit=5))
    assert len({t.pattern for t in vision}) == 5  # one task per pattern before any second
