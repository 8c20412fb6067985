"""Generate the agent-evaluation split (benchmark/splits/v1.json) deterministically.

    .venv/bin/python benchmark/splits/make_splits.py            # rewrites v1.json (same content every run)
    .venv/bin/python benchmark/splits/make_splits.py --check    # exit 1 if v1.json differs from a fresh one

Rules (docs/benchmark.md, "Agent-evaluation split"):
- units are PATTERNS of levels 1 and 2: no pattern is in both splits;
- every pattern used to develop the offline rules goes to dev: those of the subsets chosen by
  experiments/leka_l1l2_benchmark.py (60 L1+L2 workloads) and experiments/offline_proposer_l1.py (60 L1);
- each other pattern goes to test or dev by the parity of the first byte of sha256("v1:" + pattern);
- then, per (domain, level), if either split is empty, the lowest-hash pattern of that cell moves to it;
- one workload per pattern (the first by id); the task list of each split is ordered round-robin over
  (domain, level) cells, so any prefix (`--limit N`, an experiment's `limit`) covers the domains evenly.
The file also lists the runnable targets of the machine that generated it (runnability is re-checked
when a target is used).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("v1.json")
VERSION = "v1"


def _load_script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def dev_patterns_from_experiments(tasks: list[Any]) -> set[str]:
    l1l2 = _load_script("leka_l1l2_benchmark").select_subset(60)
    l1 = _load_script("offline_proposer_l1").sample([t for t in tasks if t.level == 1], 60)
    return {t.pattern for t in l1l2} | {t.pattern for t in l1}


def _h(pattern: str) -> str:
    return hashlib.sha256(f"{VERSION}:{pattern}".encode()).hexdigest()


def assign(tasks: list[Any], dev_fixed: set[str]) -> dict[str, str]:
    """pattern -> "dev" | "test"."""
    cells: dict[tuple[str, int], set[str]] = defaultdict(set)
    for t in tasks:
        cells[(t.domain, t.level)].add(t.pattern)
    split = {p: "dev" if p in dev_fixed else ("test" if int(_h(p)[:2], 16) % 2 else "dev")
             for ps in cells.values() for p in ps}
    for cell in sorted(cells):
        for side in ("test", "dev"):
            if not any(split[p] == side for p in cells[cell]):
                movable = sorted((p for p in cells[cell] if p not in dev_fixed or side == "dev"), key=_h)
                if movable:
                    split[movable[0]] = side
    return split


def round_robin(tasks: list[Any]) -> list[str]:
    cells: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for t in sorted(tasks, key=lambda t: (_h(t.pattern), t.id)):
        cells[(t.domain, t.level)].append(t)
    order: list[str] = []
    queues = [cells[c] for c in sorted(cells)]
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0).id)
    return order


def build() -> dict[str, Any]:
    from leka.targets import all_presets, get_target
    from leka.tasks import all_tasks

    tasks = [t for t in all_tasks() if t.level in (1, 2)]
    dev_fixed = dev_patterns_from_experiments(tasks)
    split = assign(tasks, dev_fixed)
    first: dict[str, Any] = {}
    for t in sorted(tasks, key=lambda t: t.id):
        first.setdefault(t.pattern, t)
    out: dict[str, Any] = {"version": VERSION, "generator": "benchmark/splits/make_splits.py",
                           "levels": [1, 2], "unit": "pattern",
                           "targets": sorted(name for name in all_presets() if get_target(name).runnable),
                           "dev_fixed_patterns": sorted(dev_fixed)}
    for side in ("dev", "test"):
        chosen = [t for p, t in first.items() if split[p] == side]
        out[side] = {"patterns": sorted(t.pattern for t in chosen), "tasks": round_robin(chosen),
                     "domains": sorted({t.domain for t in chosen}), "levels": sorted({t.level for t in chosen})}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the checked-in file instead of writing")
    args = ap.parse_args()
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        same = OUT.is_file() and OUT.read_text() == text
        print("v1.json is up to date" if same else "v1.json differs from a fresh generation")
        return 0 if same else 1
    OUT.write_text(text)
    data = json.loads(text)
    print(f"wrote {OUT}: dev {len(data['dev']['tasks'])} tasks, test {len(data['test']['tasks'])} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
