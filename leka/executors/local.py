"""The local executor: samples one after another in this process, judged by one isolated evaluator worker
(kept across samples of the same target and evaluation settings)."""
from __future__ import annotations

import atexit
from typing import Any, Iterable, Iterator

from .base import SampleOutcome, SampleSpec, make_evaluator, run_sample, where


class LocalExecutor:
    name = "local"

    def __init__(self) -> None:
        self._ev: Any = None
        self._ev_key: tuple | None = None
        atexit.register(self.close)

    def evaluator(self, spec: SampleSpec) -> Any:
        """The evaluator for spec's target and settings: kept while they stay the same (closed at exit)."""
        key = (repr(spec.target_spec), spec.trials, spec.measure, spec.rpc)
        if key != self._ev_key:
            self.close()
            self._ev = make_evaluator(spec).__enter__()
            self._ev_key = key
        return self._ev

    def run(self, specs: Iterable[SampleSpec]) -> Iterator[SampleOutcome]:
        placed = where(self.name)
        for spec in specs:
            yield run_sample(spec, self.evaluator(spec), placed)

    def close(self) -> None:
        if self._ev is not None:
            self._ev.close()
        self._ev, self._ev_key = None, None
