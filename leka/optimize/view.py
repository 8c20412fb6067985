"""Live progress of `leka optimize`: one row per kernel (status, budget, result) and an overall line."""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from leka.cli.tables import Col, rich_table
from leka.progress import LiveView

from .profile import KernelProfile


NAME_WIDTH = 22  # what a kernel name asks for before optional columns give way; cut from the middle
# (leka.cli.tables "name" columns: fused_matm…_add_relu_3), both ends tell kernels apart


COLS = [Col("kernel", "name", want=NAME_WIDTH), Col("calls", "num", optional=True), Col("share", "num"),
        Col("default ms", "num", optional=True), Col("budget", "desc", optional=True, want=12),
        Col("status", "desc", want=12), Col("result", "id")]


class OptimizeView(LiveView):
    """One row per kernel: a live table on a terminal, plain lines otherwise (logs, CI)."""

    def __init__(self, quiet: bool = False) -> None:
        super().__init__(quiet)
        self.rows: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self._t0 = time.monotonic()

    def kernels(self, profs: list[KernelProfile]) -> None:
        for p in profs:
            self.order.append(p.spec.key)
            queued = p.budget is not None or p.quick
            status = "queued" if queued else f"not tuned ({p.why_not})"
            self.rows[p.spec.key] = {"name": p.spec.name, "weight": p.spec.weight, "share": p.share,
                                     "ms": p.default_ms, "budget": p.budget or ("quick pass" if p.quick else None),
                                     "status": status, "result": "-"}

    def set(self, key: str, status: str, result: str = "-") -> None:
        self.rows[key].update(status=status, result=result)
        self._refresh(f"{self.rows[key]['name']}: {status} {result if result != '-' else ''}".strip())

    def event(self, key: str, kind: str, payload: Any) -> None:
        row = self.rows.get(key)
        if row is None:
            return
        if kind == "start":
            row["started"] = time.monotonic()
            self.set(key, "tuning")
        elif kind == "msg":
            row["note"] = str(payload)
            self._refresh(None)
        elif kind == "placed":  # an executor (leka/executors) started the kernel's job on this node
            row["node"] = str(payload)
            self._refresh(None)
        elif kind == "done":
            w = payload
            result = f"{w.speedup:.2f}x" if w.source else ("not searched: minutes ended" if w.detail.get("skipped")
                                                             else "default kept")
            self.set(key, "done", result)

    def frame(self) -> Any:
        rows = []
        for key in self.order:
            r = self.rows[key]
            status = r["status"]
            if status == "tuning" and "started" in r:
                el = int(time.monotonic() - r["started"])
                status = f"tuning {el // 60}:{el % 60:02d}" + (f" on {r['node']}" if r.get("node") else "")
            rows.append([r["name"], str(r["weight"]), f"{100 * r['share']:.1f} %",
                         f"{r['ms']:.4g}" if r["ms"] is not None else "-", r["budget"] or "-", status, r["result"]])
        return rich_table(f"leka optimize — {self._overall()}", COLS, rows, self.console.width)

    def _overall(self) -> str:
        tuned = [r for r in self.rows.values() if r["budget"] is not None or r["status"].startswith("db")]
        done = sum(1 for r in tuned if r["status"] in ("done",) or r["status"].startswith("db"))
        el = int(time.monotonic() - self._t0)
        running = Counter(r["node"] for r in tuned if r["status"] == "tuning" and r.get("node"))
        on = "; running: " + ", ".join(f"{n} {c}" for n, c in sorted(running.items())) if running else ""
        return f"{done}/{len(tuned)} kernels decided, {el // 60}:{el % 60:02d} elapsed{on}"

    def _refresh(self, line: str | None) -> None:
        self.redraw()
        if line:
            self.line(f"  [{self._overall()}] {line}")
