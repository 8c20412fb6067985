"""Every SQLite file LEKA keeps: where it lives by default and how it is opened.

The files (all in the .leka folder of the current directory, or $LEKA_HOME): results.sqlite (leka.bench.store),
agent.sqlite (leka.agent.trace), agent_checkpoints.sqlite (LangGraph's, leka.agent.run), llm_cache.sqlite
(leka.llm.cache), tuning.db (leka.optimize.db) and remote/pending.sqlite (leka.remote.pending).

`open_db` opens one in WAL mode (readers such as reports work during a run) with its schema, and checks the
file's schema version (SQLite's user_version): a file written before versions were recorded holds the same
tables as version 1 and is stamped so; a file from a newer LEKA, one whose tables lack a column this version
needs, a truncated file or a file that is not SQLite gives a one-line StoreError (exit 2), never a traceback.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from leka.errors import LekaError


class StoreError(LekaError):
    pass


def leka_home() -> Path:
    """The .leka folder of the current directory, or $LEKA_HOME."""
    home = os.environ.get("LEKA_HOME")
    return Path(home) if home else Path.cwd() / ".leka"


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check_columns(db: sqlite3.Connection, schema: str, path: Path, what: str) -> None:
    """The tables a file already has must carry the columns this schema declares (an edited or foreign file)."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.executescript(schema)
        for table in _tables(probe) & _tables(db):
            want = {r[1] for r in probe.execute(f"PRAGMA table_info({table})")}
            have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
            if want - have:
                raise StoreError(f"{path} is not a {what} this LEKA can read: table {table} lacks "
                                 f"{', '.join(sorted(want - have))} (move the file away to start a new one)")
    finally:
        probe.close()


def _versioned(db: sqlite3.Connection, schema: str, version: int, path: Path, what: str) -> None:
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found > version:
        raise StoreError(f"{path} is a {what} of schema version {found}, written by a newer LEKA "
                         f"(this one reads version {version}): upgrade LEKA or pass another file")
    if 0 < found < version:  # no older numbered version exists yet; a migration goes here when one does
        raise StoreError(f"{path} is a {what} of schema version {found}; this LEKA reads version {version}")
    if found == 0:  # new, or written before versions were recorded: same tables as version 1
        _check_columns(db, schema, path, what)
    db.executescript(schema)
    if found != version:
        db.execute(f"PRAGMA user_version = {int(version)}")


def open_db(path: str | os.PathLike[str], schema: str, *, what: str, version: int = 1,
            rows: bool = False, threads: bool = False, autocommit: bool = True) -> sqlite3.Connection:
    """Open (creating folder, file and tables) one of LEKA's SQLite files in WAL mode. `what` names the file in
    messages ("results store"); rows: rows addressable by column name; threads: the connection may be used
    from several threads (the caller serialises); autocommit: each statement commits unless a transaction is
    opened explicitly (off: Python's implicit transactions, for code that commits itself)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the folder of {what} {path}: {e.strerror or e}") from None
    if path.is_dir():
        raise StoreError(f"{what} {path} is a folder, not a file")
    isolation: dict[str, Any] = {"isolation_level": None} if autocommit else {}
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=not threads, **isolation)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        _versioned(db, schema, version, path, what)
    except sqlite3.OperationalError as e:  # locked past the timeout, no permission
        db.close()
        raise StoreError(f"cannot open {what} {path}: {e}") from None
    except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
        db.close()
        raise StoreError(f"{what} {path} is not a readable SQLite file ({e}); move it away to start a new one") from None
    except BaseException:
        db.close()
        raise
    if rows:
        db.row_factory = sqlite3.Row
    return db


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT through `cur` gave its row."""
    rowid = cur.lastrowid
    assert rowid is not None  # set by every successful INSERT
    return rowid
