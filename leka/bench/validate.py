"""`leka bench validate`: every selected workload's definition, built with TVM's default lowering, must
match its reference through the evaluator (correctness only, no timing)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from leka.errors import LekaError


@dataclass
class ValidationReport:
    target: str
    results: list[dict[str, Any]] = field(default_factory=list)  # task, ok, failure, error, eval_s
    wall_s: float = 0.0

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [r for r in self.results if not r["ok"]]

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "wall_s": self.wall_s, "total": len(self.results),
                "failed": len(self.failures), "results": self.results}


# A definition whose weights are module constants prints them as metadata[...] references, which TVMScript
# text (every candidate and baseline is text) cannot carry.
CONSTANTS_MARK = 'metadata["'
CONSTANTS_FIX = ("the definition holds weights as module constants (metadata[...]), which TVMScript text cannot "
                 "carry: make ONNX tasks with leka.tasks.onnx_task.onnx_task(PATH, ...), which passes them as "
                 "inputs (docs/tasks.md)")


def validate_tasks(tasks: Sequence[Any], target: Any, trials: int = 3,
                   on_result: Callable[[dict[str, Any]], None] | None = None) -> ValidationReport:
    from leka.compiler import default_schedule
    from leka.evaluator import EvalConfig, Evaluator

    rep = ValidationReport(target.name)
    t0 = time.perf_counter()
    # holdout: the suite must hold on the held-back input families as well, since judging uses them
    with Evaluator(target, EvalConfig(trials=trials, measure=False, holdout=True)) as ev:
        for task in tasks:
            t1 = time.perf_counter()
            try:
                src = default_schedule(task.build(), target, rules="naive").script()
                if CONSTANTS_MARK in src:
                    raise LekaError(CONSTANTS_FIX)
                res = ev.evaluate(task, src, measure=False)
                built_only = res.status == "build_only"
                ok = res.compiled and (res.correct is True or built_only) and res.failure is None
                r = {"task": task.id, "level": task.level, "ok": bool(ok), "failure": res.failure,
                     "error": res.error if not ok else None, "status": res.status}
            except Exception as e:  # noqa: BLE001 - a definition that does not even build is a failure
                r = {"task": task.id, "level": task.level, "ok": False, "failure": "definition_error",
                     "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}",
                     "status": "definition_error"}
            r["eval_s"] = time.perf_counter() - t1
            rep.results.append(r)
            if on_result:
                on_result(r)
    rep.wall_s = time.perf_counter() - t0
    return rep
