"""The one progress component of the long commands (`bench run`, `experiment run`, `optimize`, `tune`):
on a terminal, a rich Live view on stderr redrawn from the subclass's `frame()`; otherwise (logs, CI, pipes)
one plain line per event through `line()`; nothing at all when quiet. Subclasses hold the state they show
(leka.executors.progress.FanoutProgress: samples per node; leka.optimize.view.OptimizeView: kernels;
leka.agent.progress.LiveProgress: agent steps) and call `redraw()` when it changes."""
from __future__ import annotations

from typing import Any


class LiveView:
    refresh_per_second = 2

    def __init__(self, quiet: bool = False, live: bool | None = None, console: Any = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.live_ok = not quiet and (self.console.is_terminal if live is None else live)
        self._live: Any = None

    def frame(self) -> Any:
        """What the live view shows now (a rich renderable)."""
        raise NotImplementedError

    @property
    def drawing(self) -> bool:
        return self._live is not None

    def redraw(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def line(self, text: str) -> None:
        """One line for logs, when no live view is drawn (a live view shows the same in its frame)."""
        if self._live is None and not self.quiet:
            self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def say(self, text: str) -> None:
        """A note for every reader: above the live view on a terminal, a plain line otherwise."""
        if not self.quiet:
            self.console.print(text, highlight=False, markup=False, soft_wrap=self._live is None)

    def __enter__(self) -> Any:
        if self.live_ok:
            from rich.live import Live

            self._live = Live(console=self.console, get_renderable=self.frame, transient=False,
                              refresh_per_second=self.refresh_per_second)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)  # draws the last frame once more
            self._live = None
