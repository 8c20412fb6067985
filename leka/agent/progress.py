"""Live view of a run, fed by the graph's stream of node updates (stream_mode="updates").

`LiveProgress` redraws a rich table (a row per step) on stderr; `LineProgress` prints one plain line
per step (for logs, pipes, and `--json` runs where stdout is reserved for the record).
"""
from __future__ import annotations

import sys
from typing import Any, Protocol

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table


class Progress(Protocol):
    def __enter__(self) -> "Progress": ...
    def __exit__(self, *exc: Any) -> None: ...
    def update(self, node: str, update: dict[str, Any]) -> None: ...


def _fmt_x(v: Any) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) else "-"


def step_cells(step: dict[str, Any]) -> list[str]:
    cands = step.get("candidates", [])
    n_ok = sum(1 for c in cands if c.get("correct"))
    n_comp = sum(1 for c in cands if c.get("compiled"))
    fails = sorted({c["failure"] for c in cands if c.get("failure")})
    acc = step.get("accepted")
    what = cands[acc].get("summary", "") if acc is not None else (step.get("error") or ", ".join(fails) or "-")
    spent = step.get("budget_spent") or {}
    short = {"calls": "calls", "tokens": "tok", "usd": "$", "compiles": "comp", "measurements": "meas"}
    spent_txt = " ".join(f"{short[k]}={spent[k]:.4g}" for k in short if spent.get(k))
    return [str(step.get("step")), step.get("layer", ""), step.get("outcome", ""),
            f"{n_comp}/{n_ok}/{len(cands)}", _fmt_x(step.get("best_after")), what[:60],
            f"{step.get('decision', '')}->{step.get('next', '')}", spent_txt[:40]]


HEADERS = ["step", "layer", "outcome", "comp/ok/n", "best", "accepted / errors", "route", "budget spent"]


class LiveProgress:
    def __init__(self, title: str, console: Console | None = None):
        self.title = title
        self.console = console or Console(stderr=True)
        self.rows: list[list[str]] = []
        self._live: Live | None = None
        self.footer = ""

    def _table(self) -> Table:
        t = Table(title=self.title, caption=self.footer or None)
        for h in HEADERS:
            t.add_column(h, overflow="fold")
        for r in self.rows[-30:]:
            t.add_row(*(escape(c) for c in r))  # summaries hold "[...]", which rich would read as markup
        return t

    def __enter__(self) -> "LiveProgress":
        self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False)
        self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def update(self, node: str, update: dict[str, Any]) -> None:
        for step in update.get("steps", []):
            self.rows.append(step_cells(step))
        if node == "finalize" and update.get("final"):
            f = update["final"]
            self.footer = (f"final (fresh worker): correct={f['correct']} speedup={_fmt_x(f.get('speedup'))} "
                           f"vs {f.get('baseline')}")
        if self._live is not None:
            self._live.update(self._table())


class LineProgress:
    def __init__(self, title: str, stream: Any = None):
        self.stream = stream or sys.stderr
        print(title, file=self.stream, flush=True)

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, node: str, update: dict[str, Any]) -> None:
        for step in update.get("steps", []):
            print("  " + " | ".join(f"{h}={c}" for h, c in zip(HEADERS, step_cells(step))),
                  file=self.stream, flush=True)
        if node == "finalize" and update.get("final"):
            f = update["final"]
            print(f"  finalize: correct={f['correct']} speedup={_fmt_x(f.get('speedup'))} vs {f.get('baseline')}",
                  file=self.stream, flush=True)


class NoProgress:
    def __enter__(self) -> "NoProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, node: str, update: dict[str, Any]) -> None:
        pass
