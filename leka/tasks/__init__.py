"""Task registry: the built-in EdgeKernelBench suite (package `benchmark`), plus user task folders.

A user folder (``--tasks PATH``) holds ``*.py`` files, each defining ``TASKS = [Task(...), ...]``
(or a ``tasks()`` function returning them); see docs/tasks.md. Ids must be unique.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Iterable

from leka.errors import LekaError, UnknownTaskError

from .task import DOMAINS, LEVELS, ArgSpec, Task, generate

__all__ = ["ArgSpec", "Task", "generate", "DOMAINS", "LEVELS", "all_tasks", "get_task", "load_task_file",
           "load_task_folder", "validate_task_metadata"]

ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_BUILTIN: dict[str, Task] | None = None
_USER: dict[str, Task] = {}


def validate_task_metadata(t: Task) -> None:
    """Cheap structural checks (no TVM build): raise LekaError with the reason."""
    if not ID_RE.match(t.id):
        raise LekaError(f"task id {t.id!r} must match {ID_RE.pattern}")
    if t.level not in LEVELS:
        raise LekaError(f"task {t.id}: level {t.level} not in {LEVELS}")
    if t.domain not in DOMAINS:
        raise LekaError(f"task {t.id}: domain {t.domain!r} not in {DOMAINS}")
    if not t.inputs or not t.outputs:
        raise LekaError(f"task {t.id}: needs at least one input and one output arg")
    names = [a.name for a in t.args]
    if len(set(names)) != len(names):
        raise LekaError(f"task {t.id}: duplicate arg names {names}")


def _builtin() -> dict[str, Task]:
    global _BUILTIN
    if _BUILTIN is None:
        tasks: dict[str, Task] = {}
        suite = importlib.import_module("benchmark")
        for t in suite.all_tasks():
            if t.id in tasks:
                raise LekaError(f"duplicate built-in task id {t.id}")
            tasks[t.id] = t
        _BUILTIN = tasks
    return _BUILTIN


def load_task_file(path: Path) -> list[Task]:
    name = "leka_user_tasks_" + re.sub(r"\W", "_", str(path.resolve()))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LekaError(f"cannot load task file {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise LekaError(f"task file {path}: {type(e).__name__}: {e}") from None
    found = getattr(mod, "TASKS", None)
    if found is None and hasattr(mod, "tasks"):
        found = mod.tasks()
    if found is None:
        raise LekaError(f"task file {path} defines neither TASKS nor tasks()")
    out = list(found)
    for t in out:
        t.source = str(path)
        validate_task_metadata(t)
    return out


def load_task_folder(path: str | Path) -> list[Task]:
    """Register the tasks in a user file or folder (``--tasks PATH``); returns them."""
    p = Path(path)
    if not p.exists():
        raise LekaError(f"--tasks {path}: no such file or folder")
    files = [p] if p.is_file() else sorted(f for f in p.glob("*.py") if not f.name.startswith("_"))
    if not files:
        raise LekaError(f"--tasks {path}: no *.py task files found")
    loaded = [t for f in files for t in load_task_file(f)]
    for t in loaded:
        if t.id in _builtin() or (t.id in _USER and _USER[t.id].source != t.source):
            raise LekaError(f"task id {t.id} from {t.source} is already defined")
        _USER[t.id] = t
    return loaded


def all_tasks(task_paths: Iterable[str | Path] = ()) -> list[Task]:
    for p in task_paths:
        load_task_folder(p)
    return list(_builtin().values()) + list(_USER.values())


def get_task(task_id: str) -> Task:
    t = _USER.get(task_id) or _builtin().get(task_id)
    if t is None:
        known = sorted(_builtin())
        close = [k for k in known if task_id.lower() in k][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else "; `leka bench list` shows all"
        raise UnknownTaskError(f"unknown task {task_id!r}{hint}")
    return t
