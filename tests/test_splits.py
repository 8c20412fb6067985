"""The agent-evaluation split v1: disjoint by pattern, covering every domain and levels 1-2 on both sides,
the rule-development patterns in dev, reproducible by its generator, selectable by `leka bench --split`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from leka.bench.splits import load_split_file, split_task_ids, split_tasks
from leka.errors import LekaError

ROOT = Path(__file__).resolve().parents[1]


def test_disjoint_by_pattern_and_covering():
    from leka.tasks import DOMAINS, get_task

    data = load_split_file("v1")
    dev, test = (set(data[s]["patterns"]) for s in ("dev", "test"))
    assert dev and test and not dev & test
    assert set(data["dev_fixed_patterns"]) <= dev
    for side in ("dev", "test"):
        tasks = [get_task(i) for i in data[side]["tasks"]]
        assert {t.pattern for t in tasks} == set(data[side]["patterns"])  # one workload per pattern
        assert {t.domain for t in tasks} == set(DOMAINS) and {t.level for t in tasks} == {1, 2}
    assert "host-cpu" in data["targets"]


def test_generator_reproduces_the_file():
    proc = subprocess.run([sys.executable, "benchmark/splits/make_splits.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_prefix_spreads_over_domains():
    first = split_tasks("test", limit=7)
    assert len({t.domain for t in first}) >= 4
    assert [t.id for t in split_tasks("v1:test", level=2, limit=3)] == \
        [i for i in split_task_ids("test") if i.startswith("l2-")][:3]


@pytest.mark.parametrize("spec", ["train", "v9:test", ""])
def test_bad_split_names(spec):
    with pytest.raises(LekaError):
        split_task_ids(spec)


def test_bench_list_split():
    proc = subprocess.run([sys.executable, "-m", "leka.cli.main", "bench", "list", "--split", "dev", "--limit", "2",
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert [t["id"] for t in json.loads(proc.stdout)] == split_task_ids("dev")[:2]
