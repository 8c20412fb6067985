"""Live view of a run, fed by the graph's stream of node updates (stream_mode="updates").

`LiveProgress` (leka.progress.LiveView) redraws a rich table (a row per step) on stderr; `LineProgress`, the
same view with live=False, prints one plain line per step (for logs, pipes, and `--json` runs where stdout is
reserved for the record).
"""
from __future__ import annotations

from typing import Any, Protocol

from rich.console import Console

from leka.progress import LiveView


class Progress(Protocol):
    def __enter__(self) -> "Progress": ...
    def __exit__(self, *exc: Any) -> None: ...
    def update(self, node: str, update: dict[str, Any]) -> None: ...


def fmt_x(v: Any) -> str:
    """A speedup; "—" when there is none (no timing, or no runnable kernel yet: stored as 0)."""
    return f"{v:.2f}x" if isinstance(v, (int, float)) and v > 0 else "—"


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
            f"{n_comp}/{n_ok}/{len(cands)}", fmt_x(step.get("best_after")), what[:60],
            f"{step.get('decision', '')}->{step.get('next', '')}", spent_txt[:40]]


HEADERS = ["step", "layer", "outcome", "comp/ok/n", "best", "accepted / errors", "route", "budget spent"]
# Column kinds for the live table (leka.cli.tables): route and budget give way first on narrow terminals
# (the status line under the table repeats both).
COLUMN_KINDS = [("num", False), ("id", False), ("id", False), ("num", False), ("num", False), ("desc", False),
                ("id", True), ("desc", True)]
RESERVED_LINES = 9  # title, header rule and row, bottom border, status and caption lines


class LiveProgress(LiveView):
    """A table of the steps that fits the terminal (the newest rows when they do not all fit) and a status
    line redrawn four times a second: what runs now, the elapsed time, what the run has spent. With
    live=False (logs, pipes, `--json` runs): the title, then one plain line per step (LineProgress)."""

    refresh_per_second = 4

    def __init__(self, title: str, console: Console | None = None, live: bool = True):
        import time

        super().__init__(live=live, console=console)
        self.title = title
        self.rows: list[list[str]] = []
        self.footer = ""
        self.now = "step 1: proposing and evaluating"
        self.spent = ""
        self._t0 = time.monotonic()
        if not live:
            self.line(title)

    def _status(self) -> str:
        import time

        secs = int(time.monotonic() - self._t0)
        spent = f" · spent {self.spent}" if self.spent else ""
        return f"{self.now} · elapsed {secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}{spent}"

    def frame(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        from leka.cli.tables import Col, rich_table

        fit = max(1, self.console.height - RESERVED_LINES)
        shown = self.rows[-fit:]
        title = self.title + (f" (last {len(shown)} of {len(self.rows)} steps)" if len(shown) < len(self.rows)
                              else "")
        cols = [Col(h, kind, optional, want=30 if h == "accepted / errors" else 8)
                for h, (kind, optional) in zip(HEADERS, COLUMN_KINDS)]
        table = rich_table(title, cols, shown, self.console.width, self.footer or None)
        return Group(table, Text(self._status(), overflow="fold"))

    def __exit__(self, *exc: Any) -> None:
        self.now = "finished" if exc[0] is None else f"stopped: {exc[0].__name__}"
        super().__exit__(*exc)  # draws the last frame once more, with this status

    def journal(self, key: str, value: Any) -> None:
        """Work inside a step, from the run's journal: the proposals made, then each evaluation's result."""
        head, _, what = key.partition(":")
        step = head[4:] if head.startswith("step") else head
        if what == "proposals" and isinstance(value, list):
            self._proposals = [((p.get("meta") or {}).get("rule") or p.get("layer") or "?") for p in value]
            names = ", ".join(self._proposals[:3]) + (", ..." if len(self._proposals) > 3 else "")
            self.now = f"step {step}: evaluating {len(value)} proposal(s): {names}"
        elif what.startswith("eval") and isinstance(value, dict):
            n = len(getattr(self, "_proposals", [])) or "?"
            result = fmt_x(value.get("speedup")) if value.get("correct") else (value.get("failure") or "failed")
            label = "finalize: re-measured in a fresh worker" if head == "final" else \
                f"step {step}: evaluated {int(what[4:] or 0) + 1}/{n}"
            self.now = f"{label} ({result})"

    def update(self, node: str, update: dict[str, Any]) -> None:
        for step in update.get("steps", []):
            self.rows.append(step_cells(step))
            cells = self.rows[-1]
            self.line("  " + " | ".join(f"{h}={c}" for h, c in zip(HEADERS, cells)))
            self.spent = cells[7]
            nxt = step.get("next") or ""
            self.now = (f"after step {step.get('step')} ({cells[6]}): " +
                        ("re-measuring the best kernel in a fresh worker" if nxt == "finalize" else
                         f"step {int(step.get('step') or 0) + 1} at {nxt or 'the next layer'}: proposing and "
                         "evaluating"))
        if node == "finalize" and update.get("final"):
            f = update["final"]
            self.footer = (f"final (fresh worker): correct={f['correct']} speedup={fmt_x(f.get('speedup'))} "
                           f"vs {f.get('baseline')}")
            self.line(f"  finalize: correct={f['correct']} speedup={fmt_x(f.get('speedup'))} vs {f.get('baseline')}")
            self.now = "finalized"
        self.redraw()


def LineProgress(title: str) -> LiveProgress:  # noqa: N802 - the plain-lines form of the same view
    return LiveProgress(title, live=False)


class NoProgress:
    def __enter__(self) -> "NoProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, node: str, update: dict[str, Any]) -> None:
        pass
