"""CandidateIR: a task's definition plus an algorithm, a schedule and a memory layer.

Application order: the algorithm gives the PrimFunc; schedule steps apply in order, and each memory
step applies right after the schedule step its "after" field names (-1 = before all, null = at the
end). That keeps one total order, so a TVM trace imports losslessly and memory decisions can sit at
loops the schedule created.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import IRApplyError, IRFormatError
from .layers import AlgorithmLayer, MemoryLayer, ScheduleLayer, diff_lines, func_script

LAYERS = ("algorithm", "schedule", "memory")
_LAYER_TYPES: dict[str, type[AlgorithmLayer] | type[ScheduleLayer]] = {"algorithm": AlgorithmLayer, "schedule": ScheduleLayer, "memory": MemoryLayer}


@dataclass(frozen=True)
class CandidateIR:
    task_id: str
    algorithm: AlgorithmLayer = field(default_factory=AlgorithmLayer)
    schedule: ScheduleLayer = field(default_factory=ScheduleLayer)
    memory: MemoryLayer = field(default_factory=MemoryLayer)
    notes: dict[str, Any] = field(default_factory=dict, compare=False)  # origin: rule, knobs (not hashed)
    task: Any = field(default=None, compare=False, repr=False)

    # ---- construction / serialisation -------------------------------------------------------
    @classmethod
    def initial(cls, task: Any) -> "CandidateIR":
        return cls(task_id=task.id, task=task)

    def with_layer(self, name: str, layer: Any) -> "CandidateIR":
        if name not in LAYERS:
            raise IRFormatError(f"unknown layer {name!r}; layers: {', '.join(LAYERS)}")
        if not isinstance(layer, _LAYER_TYPES[name]):
            layer = _LAYER_TYPES[name].from_json(layer)
        return replace(self, **{name: layer})

    def with_notes(self, **notes: Any) -> "CandidateIR":
        return replace(self, notes={**self.notes, **notes})

    def layer(self, name: str) -> Any:
        if name not in LAYERS:
            raise IRFormatError(f"unknown layer {name!r}; layers: {', '.join(LAYERS)}")
        return getattr(self, name)

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task_id, "algorithm": self.algorithm.to_json(), "schedule": self.schedule.to_json(),
                "memory": self.memory.to_json(), "notes": self.notes}

    @classmethod
    def from_json(cls, d: dict[str, Any], task: Any = None) -> "CandidateIR":
        if not isinstance(d, dict) or not isinstance(d.get("task"), str):
            raise IRFormatError("a candidate IR is a JSON object with 'task', 'algorithm', 'schedule', 'memory'")
        notes = d.get("notes") or {}
        if not isinstance(notes, dict):
            raise IRFormatError("a candidate IR's 'notes' must be a JSON object")
        return cls(task_id=d["task"], algorithm=AlgorithmLayer.from_json(d.get("algorithm")),
                   schedule=ScheduleLayer.from_json(d.get("schedule", [])),
                   memory=MemoryLayer.from_json(d.get("memory", [])), notes=dict(notes), task=task)

    def hash(self) -> str:
        body = {k: v for k, v in self.to_json().items() if k != "notes"}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def _task(self) -> Any:
        if self.task is not None:
            return self.task
        from leka.tasks import get_task

        return get_task(self.task_id)

    # ---- application --------------------------------------------------------------------------
    def base_func(self) -> Any:
        """The algorithm layer's PrimFunc. Only for trusted text: untrusted text goes to leka.ir.isolated."""
        if self.algorithm.kind == "task":
            return self._task().definition()
        if not self.algorithm.is_trusted:
            raise IRApplyError("untrusted algorithm text must be parsed in a worker (leka.ir.isolated)")
        from .isolated import parse_algorithm

        return parse_algorithm(self.algorithm.text, self._task())

    def ordered_steps(self) -> list[tuple[str, int, Any]]:
        """(layer, index, step) in application order."""
        sched = list(self.schedule.steps)
        for i, s in enumerate(self.memory.steps):
            after = s.args.get("after")
            if after is not None and after >= len(sched):
                raise IRApplyError(f"memory step {i} {s.render()}: 'after' = {after} but the schedule has only "
                                   f"{len(sched)} step(s)")
        out: list[tuple[str, int, Any]] = [("memory", i, s) for i, s in enumerate(self.memory.steps)
                                           if s.args.get("after") == -1]
        for j, s in enumerate(sched):
            out.append(("schedule", j, s))
            out += [("memory", i, m) for i, m in enumerate(self.memory.steps) if m.args.get("after") == j]
        out += [("memory", i, m) for i, m in enumerate(self.memory.steps) if m.args.get("after") is None]
        return out

    def apply(self, func: Any = None) -> Any:
        """Apply the schedule and memory layers to a fresh LiveSchedule (trusted func only)."""
        from .live import LiveSchedule

        live = LiveSchedule(func if func is not None else self.base_func())
        for layer, i, step in self.ordered_steps():
            try:
                live.apply(step)
            except IRApplyError as e:
                raise IRApplyError(f"{layer} step {i} {step.render()}: {e}") from None
        return live

    def validate(self, target: Any) -> list[str]:
        """Every problem found, as messages fit to hand back to a model; [] means valid."""
        if not self.algorithm.is_trusted:
            from .isolated import run_isolated

            return run_isolated("validate", self, target)["errors"]
        from .checks import check_scheduled

        try:
            live = self.apply()
        except IRApplyError as e:
            return [str(e)]
        return check_scheduled(live, self._task(), target)

    def to_tvmscript(self, target: Any) -> str:
        """The flat form: one scheduled PrimFunc (global_symbol "main") as TVMScript text."""
        if not self.algorithm.is_trusted:
            from .isolated import run_isolated

            res = run_isolated("flat", self, target)
            if res["errors"]:
                raise IRApplyError(res["errors"][0])
            return res["script"]
        from .checks import check_scheduled

        live = self.apply()
        errors = check_scheduled(live, self._task(), target)
        if errors:
            raise IRApplyError(errors[0])
        return func_script(live.sch.mod["main"].with_attr("global_symbol", "main"))

    # ---- presentation ---------------------------------------------------------------------------
    def summary(self, layer: str | None = None) -> str:
        parts = []
        if layer in (None, "algorithm"):
            parts.append(self.algorithm.summary())
        if layer in (None, "schedule"):
            parts.append(self.schedule.summary())
        if layer in (None, "memory"):
            parts.append(self.memory.summary())
        if layer is not None and layer not in LAYERS:
            raise IRFormatError(f"unknown layer {layer!r}; layers: {', '.join(LAYERS)}")
        if self.algorithm.is_trusted:
            try:
                parts.append("loop nests (block: loop(extent kind) ...):\n" + self.apply().describe())
            except IRApplyError as e:
                parts.append(f"does not apply: {e}")
        if self.notes.get("rule"):
            parts.append(f"origin: {self.notes['rule']} knobs={json.dumps(self.notes.get('knobs', {}), sort_keys=True)}")
        parts.append(f"ir hash: {self.hash()}")
        return "\n".join(parts)

    def diff(self, other: "CandidateIR") -> str:
        """What changed from self to other, per layer (unified diff lines); '' when identical."""
        chunks = [diff_lines(n, getattr(self, n).lines(), getattr(other, n).lines()) for n in LAYERS]
        return "\n".join(c for c in chunks if c)
