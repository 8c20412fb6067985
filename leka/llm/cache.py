"""Response cache in SQLite, keyed by the prompt hash (provider, model, system, messages, params).

A hit makes no request and charges nothing, so rerunning a run is free and gives the same replies.
Only successful replies are stored; the first reply stored for a key wins (INSERT OR IGNORE), so
parallel workers sharing one file agree on what a prompt returns.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from leka.llm.errors import LLMConfigError
from leka.storage import StoreError, leka_home, open_db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    prompt_hash   TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    request       TEXT NOT NULL,   -- JSON: system, messages, max_tokens, temperature, ...
    reply         TEXT NOT NULL,   -- JSON: text, model, finish_reason, usage, cost_usd
    created       REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """.leka/llm_cache.sqlite in the current directory; LEKA_HOME replaces the .leka folder."""
    return leka_home() / "llm_cache.sqlite"


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        try:  # one connection shared across threads, serialised by our lock
            self._db = open_db(self.path, _SCHEMA, what="LLM response cache", threads=True)
        except StoreError as e:
            raise LLMConfigError(str(e)) from None
        self._lock = threading.Lock()

    def get(self, prompt_hash: str) -> dict[str, Any] | None:
        """The stored reply record for this prompt, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT reply FROM llm_cache WHERE prompt_hash = ?", (prompt_hash,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, prompt_hash: str, provider: str, model: str,
            request: dict[str, Any], reply: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?)",
                (prompt_hash, provider, model, json.dumps(request, sort_keys=True),
                 json.dumps(reply, sort_keys=True), time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
