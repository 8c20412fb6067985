"""The three layers of a candidate: algorithm (what is computed), schedule (loop primitives), memory
(caches, scopes, layouts). Each is immutable, serialises to JSON, diffs and summarises itself."""
from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from typing import Any, Self

from .errors import IRFormatError
from .steps import MEMORY_OPS, SCHEDULE_OPS, Step, parse_steps

# Hashes of algorithm texts produced in this process by the package's own TE rewrites: only these are
# parsed in-process; any other text (a model's, or one read back from disk) is parsed in a subprocess.
_TRUSTED_TEXT_HASHES: set[str] = set()


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def trusted_text_hashes() -> frozenset[str]:
    return frozenset(_TRUSTED_TEXT_HASHES)


def adopt_trusted_text_hashes(hashes: Any) -> None:
    """Trust texts that the package's own rewrites produced in a forked child of this process (the agent
    runs its proposer there under a deadline, leka.agent.deadline); never hashes from outside text."""
    _TRUSTED_TEXT_HASHES.update(str(h) for h in hashes)


def func_script(func: Any) -> str:
    """A PrimFunc as TVMScript that parses back. Variables are renamed to single definitions first: a
    schedule that inlines a block holding a Let into several consumers repeats its binding, which the
    parser's well-formedness check rejects."""
    import tvm

    mod = tvm.tirx.transform.ConvertSSA()(tvm.IRModule({"main": func}))
    return mod["main"].script()


@dataclass(frozen=True)
class AlgorithmLayer:
    """Either the task's own definition (kind "task") or a rewritten PrimFunc as TVMScript text."""

    kind: str = "task"  # "task" | "tvmscript"
    text: str = ""
    note: str = ""  # what the rewrite does, e.g. "NCHW -> NCHW8c"

    @classmethod
    def rewritten(cls, text: str, note: str = "") -> "AlgorithmLayer":
        return cls("tvmscript", text, note)

    @classmethod
    def trusted(cls, func: Any, note: str) -> "AlgorithmLayer":
        """A rewrite built by the package from TE: its text may be parsed in-process."""
        text = func_script(func)
        _TRUSTED_TEXT_HASHES.add(_text_hash(text))
        return cls("tvmscript", text, note)

    @property
    def is_trusted(self) -> bool:
        return self.kind == "task" or _text_hash(self.text) in _TRUSTED_TEXT_HASHES

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "note": self.note} if self.kind != "task" else {"kind": "task"}

    @classmethod
    def from_json(cls, d: Any) -> "AlgorithmLayer":
        if d is None or d == "task":
            return cls()
        if not isinstance(d, dict) or d.get("kind") not in ("task", "tvmscript"):
            raise IRFormatError('algorithm layer must be {"kind": "task"} or {"kind": "tvmscript", "text": "..."}')
        if d["kind"] == "task":
            return cls()
        text = d.get("text")
        if not isinstance(text, str) or "def " not in text:
            raise IRFormatError("algorithm layer: field 'text' must hold a TVMScript PrimFunc named main")
        return cls("tvmscript", text, str(d.get("note", "")))

    def lines(self) -> list[str]:
        if self.kind == "task":
            return ["task definition (unchanged)"]
        return [f"rewritten: {self.note or 'no note'}"] + self.text.splitlines()

    def summary(self) -> str:
        if self.kind == "task":
            return "algorithm: the task's own definition"
        return f"algorithm: rewritten TVMScript ({len(self.text.splitlines())} lines): {self.note or 'no note'}"


@dataclass(frozen=True)
class ScheduleLayer:
    steps: tuple[Step, ...] = field(default_factory=tuple)
    OPS = SCHEDULE_OPS
    NAME = "schedule"

    @classmethod
    def from_json(cls, data: Any) -> Self:
        return cls(tuple(parse_steps(data, cls.OPS, cls.NAME)))

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.steps]

    def lines(self) -> list[str]:
        return [f"{i}: {s.render()}" for i, s in enumerate(self.steps)]

    def summary(self) -> str:
        if not self.steps:
            return f"{self.NAME}: (empty)"
        return f"{self.NAME}: {len(self.steps)} step(s)\n" + "\n".join("  " + ln for ln in self.lines())


@dataclass(frozen=True)
class MemoryLayer(ScheduleLayer):
    OPS = MEMORY_OPS
    NAME = "memory"


def diff_lines(name: str, old: list[str], new: list[str]) -> str:
    if old == new:
        return ""
    out = difflib.unified_diff(old, new, fromfile=f"{name} (old)", tofile=f"{name} (new)", lineterm="", n=1)
    return "\n".join(out)
