"""A stored run never widens what runs: on `--resume`, the task folders (imported as Python), the proposer
and the server it talks to come from the command line only. A store is a file that anyone may have edited or
shared; its copy of those settings is compared with the command line's, and a difference is refused in one
line that names the flag, before anything of it is imported or contacted."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from leka.errors import LekaError


def resolved_paths(paths: Iterable[str | Path] | None) -> list[str]:
    """Task folders as absolute paths, in a stable order (how a run stores them, and compares them)."""
    return sorted({str(Path(p).expanduser().resolve()) for p in paths or ()})


def refuse_widening(run_id: str, checks: list[tuple[str, Any, Any]]) -> None:
    """checks: (flag, stored value, command-line value). Task-folder lists compare as resolved paths; other
    values as they are, None and "" alike (not given)."""
    for flag, stored, given in checks:
        if flag == "--tasks":
            stored, given = resolved_paths(_as_list(stored)), resolved_paths(given)
        else:
            stored, given = stored or None, given or None
        if stored != given:
            raise LekaError(f"run {run_id} was stored with {flag} {_show(stored)}, the command line gives "
                            f"{_show(given)}: a stored run never widens what runs; resume with {flag} as the run "
                            "was started (or start a new run)")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise LekaError(f"stored task folders are not a list of paths: {str(value)[:80]!r} (an edited store?)")


def _show(value: Any) -> str:
    if value is None or value == []:
        return "(none)"
    return " ".join(map(str, value)) if isinstance(value, list) else repr(str(value)[:120])
