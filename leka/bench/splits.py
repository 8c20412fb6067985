"""The versioned agent-evaluation splits (benchmark/splits/VERSION.json, made by make_splits.py): rules
and prompts are developed on `dev`, headline figures are reported on `test`; no pattern is in both.

A split is named `test`, `dev` (latest version) or `v1:test`. Its task order is round-robin over
(domain, level), so a prefix of any length covers the domains evenly.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from leka.errors import LekaError

SPLITS_DIR = Path(__file__).resolve().parents[2] / "benchmark" / "splits"
DEFAULT_VERSION = "v1"
SIDES = ("dev", "test")


def parse_split(spec: str) -> tuple[str, str]:
    """"test" -> ("v1", "test"); "v1:dev" -> ("v1", "dev")."""
    version, sep, side = str(spec).strip().rpartition(":")
    version = version if sep else DEFAULT_VERSION
    if side not in SIDES or not re.fullmatch(r"[A-Za-z0-9_-]+", version):  # a name in SPLITS_DIR, never a path
        raise LekaError(f"split {spec!r}: expected dev or test, optionally with a version (v1:test)")
    return version, side


def load_split_file(version: str) -> dict[str, Any]:
    path = SPLITS_DIR / f"{version}.json"
    if not path.is_file():
        known = sorted(p.stem for p in SPLITS_DIR.glob("v*.json"))
        raise LekaError(f"no split version {version!r} ({path} missing); known: {', '.join(known) or 'none'}")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise LekaError(f"split file {path} is not valid JSON: {e}") from None


def split_task_ids(spec: str) -> list[str]:
    version, side = parse_split(spec)
    return list(load_split_file(version)[side]["tasks"])


def split_tasks(spec: str, *, level: int | None = None, domain: str | None = None, pattern: str | None = None,
                limit: int | None = None) -> list[Any]:
    """The split's tasks in split order, filtered, then cut to `limit`."""
    from leka.tasks import get_task

    if limit is not None and limit < 1:
        raise LekaError("--limit must be >= 1")
    tasks = [get_task(i) for i in split_task_ids(spec)]
    out = [t for t in tasks if (level is None or t.level == level) and (domain is None or t.domain == domain)
           and (pattern is None or t.pattern == pattern)]
    return out[:limit] if limit else out
