"""EdgeKernelBench: the built-in task suite (L1 single operators, L2 fused patterns, L3 graphs).

Each module under benchmark/ contributes tasks through a ``tasks()`` function; ``all_tasks()``
collects them in a stable order. See docs/tasks.md for the format.
"""
from __future__ import annotations

import importlib
import pkgutil

from leka.tasks.task import Task


def all_tasks() -> list[Task]:
    out: list[Task] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "tasks"):
            out.extend(mod.tasks())
    return out
