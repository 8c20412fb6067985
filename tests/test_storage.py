"""leka.storage: every SQLite file opens through one module, with a schema version and one-line errors."""
import sqlite3
import subprocess
import sys

import pytest

from leka.agent.trace import TraceStore
from leka.bench.store import SCHEMA, ResultStore
from leka.llm.cache import ResponseCache
from leka.llm.errors import LLMConfigError
from leka.optimize.db import TuningDB
from leka.remote.pending import PendingStore
from leka.storage import StoreError, leka_home, open_db

STORES = [ResultStore, TuningDB, TraceStore, PendingStore]


@pytest.mark.parametrize("store", STORES)
def test_new_file_is_stamped_and_reopens(tmp_path, store):
    path = tmp_path / "s.sqlite"
    store(path).close()
    store(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_file_from_before_versions_is_read_and_stamped(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # what earlier LEKA wrote: the tables, user_version 0
        db.executescript(SCHEMA)
        db.execute("INSERT INTO runs VALUES ('r1', 0, 'm', 'host-cpu', '{}', '{}')")
    store = ResultStore(path)
    assert [r["run_id"] for r in store.list_runs()] == ["r1"]
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1


@pytest.mark.parametrize("store", STORES)
def test_newer_schema_is_one_line(tmp_path, store):
    path = tmp_path / "new.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    with pytest.raises(StoreError, match="schema version 7, written by a newer LEKA") as e:
        store(path)
    assert "\n" not in str(e.value)


def test_edited_table_is_one_line(tmp_path):
    path = tmp_path / "edited.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE winners (kernel_key TEXT, target_key TEXT)")
    with pytest.raises(StoreError, match="table winners lacks .*source"):
        TuningDB(path)


@pytest.mark.parametrize("content", [b"not a database at all\n" * 40, b"SQLite format 3\x00" + b"\x10" * 90])
@pytest.mark.parametrize("store", STORES)
def test_junk_or_truncated_file_is_one_line(tmp_path, store, content):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="not a readable SQLite file") as e:
        store(path)
    assert "\n" not in str(e.value)


def test_truncated_real_store_is_one_line(tmp_path):
    path = tmp_path / "r.sqlite"
    st = ResultStore(path)
    st.create_run("m", "host-cpu", {})
    st.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(StoreError):
        ResultStore(path)


def test_llm_cache_keeps_its_error_type(tmp_path):
    (tmp_path / "c.sqlite").write_bytes(b"junk" * 100)
    with pytest.raises(LLMConfigError, match="LLM response cache .* not a readable SQLite file"):
        ResponseCache(tmp_path / "c.sqlite")


def test_folder_in_place_of_file(tmp_path):
    with pytest.raises(StoreError, match="is a folder"):
        open_db(tmp_path, "", what="results store")


def test_leka_home(monkeypatch, tmp_path):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "h"))
    assert leka_home() == tmp_path / "h"
    monkeypatch.delenv("LEKA_HOME")
    monkeypatch.chdir(tmp_path)
    assert leka_home() == tmp_path / ".leka"


def test_cli_says_one_line_for_a_junk_store(tmp_path):
    junk = tmp_path / "results.sqlite"
    junk.write_text("hello\n" * 100)
    r = subprocess.run([sys.executable, "-m", "leka.cli.main", "bench", "runs", "--store", str(junk)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "not a readable SQLite file" in r.stderr
