"""Progress of a fanned-out run: running / done / failed per node, a rich live table on a terminal and
one plain line per finished sample when piped. Running counts come from the executor's PLACED events (a job
has started on a node), so queued samples are not counted as running anywhere."""
from __future__ import annotations

from collections import Counter
from typing import Any

from leka.cli.tables import Col
from leka.progress import LiveView

from .base import PLACED, SampleOutcome


def node_label(where: dict[str, Any] | None) -> str:
    if not where:
        return "?"
    node = str(where.get("node") or "?")
    host = where.get("host")
    return f"{host} ({node[:8]})" if host and host != node else node


class FanoutProgress(LiveView):
    """Samples of one or more runs, here or on a cluster's nodes: a live table of running / done / failed per
    node on a terminal, one line per finished sample otherwise (`bench run`, `experiment run`)."""

    def __init__(self, total: int, already: int, quiet: bool = False, live: bool | None = None) -> None:
        super().__init__(quiet, live)
        self.total, self.already = total, already
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.skipped = 0
        self.running_on: Counter[str] = Counter()
        self._placed: dict[str, str] = {}  # job key -> node, while it runs

    @property
    def finished(self) -> int:
        return self.already + sum(self.done.values()) + sum(self.failed.values()) + self.skipped

    def running(self) -> int:
        return sum(self.running_on.values())

    def queued(self) -> int:
        return max(0, self.total - self.finished - self.running())

    def frame(self) -> Any:
        from leka.cli.tables import rich_table

        title = (f"{self.finished}/{self.total} samples ({self.already} stored before), {self.running()} running, "
                 f"{self.queued()} queued")
        rows = [[node, str(self.running_on[node]), str(self.done[node]), str(self.failed[node])]
                for node in sorted(set(self.done) | set(self.failed) | set(self.running_on))]
        return rich_table(title, COLS, rows, self.console.width)

    def event(self, key: str, kind: str, payload: Any) -> None:
        """An executor's event: PLACED (payload: where the job started) counts it as running on that node."""
        if kind != PLACED:
            return
        node = node_label(payload)
        self._placed[key] = node
        self.running_on[node] += 1
        self.redraw()

    def _ended(self, o: SampleOutcome) -> None:
        node = self._placed.pop(o.spec.job_key(), None)
        if node is not None:
            self.running_on[node] -= 1
            if not self.running_on[node]:
                del self.running_on[node]

    def update(self, o: SampleOutcome) -> None:
        self._ended(o)
        if o.not_applicable is not None or o.pending or o.stopped is not None:
            self.skipped += 1  # nothing stored: not applicable, waiting for a remote round, or the budget ran out
            self.redraw()
            return
        node = node_label(o.record.get("where"))
        ok = o.record.get("failure") is None
        (self.done if ok else self.failed)[node] += 1
        self.redraw()
        sp = o.record.get("speedup")
        state = ("ok" + (f" {sp:.2f}x" if isinstance(sp, (int, float)) else "")) if ok else \
            f"failed ({o.record.get('failure')})"
        now = ", ".join(f"{n} {c}" for n, c in sorted(self.running_on.items()))
        self.line(f"[{self.finished}/{self.total}] {o.spec.task_id} #{o.spec.sample_idx} on {node}: "
                  f"{state}" + (f" (running: {now})" if now else ""))


COLS = [Col("node", "desc", want=16), Col("running", "num"), Col("done", "num"), Col("failed", "num")]


def where_summary(records: list[dict[str, Any]]) -> list[tuple[str, str, int, int]]:
    """(executor, node, samples, failed) for a run's records: where each sample ran."""
    seen: Counter[tuple[str, str]] = Counter()
    bad: Counter[tuple[str, str]] = Counter()
    for r in records:
        w = r.get("where") or {}
        key = (str(w.get("executor") or "local (before executors)"), node_label(w) if w else "?")
        seen[key] += 1
        bad[key] += r.get("failure") is not None
    return [(ex, node, n, bad[(ex, node)]) for (ex, node), n in sorted(seen.items())]
