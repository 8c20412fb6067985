"""Test doubles for the agent graph: a toy layered IR, a scripted proposer and a fake evaluator.

The toy IR holds, per layer, a list of named "moves"; the fake evaluator turns moves into outcomes
(speed factors, invalid, compile crash, hang, wrong result) without compiling anything. A move named
"bad..." fails ir.validate, "noapply..." fails to_tvmscript, and an algorithm move "needs_schedule"
fails to_tvmscript until a schedule move exists (like GPU targets). Also used by the kill/resume subprocess.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leka.agent.state import LAYERS


class FakeIR:
    def __init__(self, layers: dict[str, list[str]] | None = None, source: str | None = None):
        self.layers = {name: list((layers or {}).get(name, [])) for name in LAYERS}
        self.source = source  # when set, to_tvmscript returns this real TVMScript text

    def with_move(self, layer: str, move: str, source: str | None = None) -> "FakeIR":
        layers = {k: list(v) for k, v in self.layers.items()}
        layers[layer].append(move)
        return FakeIR(layers, source if source is not None else self.source)

    def to_json(self) -> dict[str, Any]:
        return {"layers": self.layers, "source": self.source}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "FakeIR":
        return cls(d["layers"], d.get("source"))

    def validate(self, target: Any) -> list[str]:
        return [f"{m}: rejected by validate" for ms in self.layers.values() for m in ms if m.startswith("bad")]

    def to_tvmscript(self, target: Any) -> str:
        if "needs_schedule" in self.layers["algorithm"] and not self.layers["schedule"]:
            raise ValueError("blocks have no loop bound to blockIdx/threadIdx")  # like GPU targets
        for ms in self.layers.values():
            for m in ms:
                if m.startswith("noapply"):
                    raise ValueError(f"cannot apply {m}: loop not found")
        return self.source if self.source is not None else "FAKE " + json.dumps(self.layers, sort_keys=True)

    def diff(self, other: "FakeIR") -> str:
        return "; ".join(f"{k}: +{m}" for k in LAYERS for m in other.layers[k][len(self.layers[k]):]) or "(same)"

    def summary(self, layer: str | None = None) -> str:
        names = [layer] if layer else list(LAYERS)
        return " | ".join(f"{k}=[{','.join(self.layers[k])}]" for k in names)

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class FakeProposal:
    layer: str
    ir: FakeIR
    rationale: str
    meta: dict[str, Any] = field(default_factory=dict)


class ScriptedProposer:
    """Each call at a layer takes the next batch of moves scripted for it ([] once the script runs out).
    A batch "GARBAGE" raises as an unparseable model reply would. Calls are appended to `log_path`."""

    name = "scripted"
    is_llm = False

    def __init__(self, script: dict[str, list[Any]], log_path: Path | None = None):
        self.script = {k: list(v) for k, v in script.items()}
        self.calls: dict[str, int] = {k: 0 for k in LAYERS}
        self.log_path = log_path
        # Like a model behind a response cache, a restarted proposer continues its script where it was.
        if log_path is not None and Path(log_path).exists():
            for line in Path(log_path).read_text().splitlines():
                self.calls[json.loads(line)["layer"]] += 1
        self.histories: list[list[dict[str, Any]]] = []

    def __call__(self, layer: str, ir: FakeIR, history: list[dict[str, Any]], k: int,
                 walked: tuple[str, ...] = ()) -> list[FakeProposal]:
        n = self.calls[layer]
        self.calls[layer] += 1
        self.histories.append(history)
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(json.dumps({"layer": layer, "n": n, "base": ir.hash(), "history": len(history)}) + "\n")
        batches = self.script.get(layer, [])
        batch = batches[n] if n < len(batches) else []
        if batch == "GARBAGE":
            raise ValueError("could not parse a proposal from the model reply: 'Sure! Here is ...'")
        # A move is a name, or [name, real TVMScript text] for runs against the real evaluator.
        moves = [(m, None) if isinstance(m, str) else (m[0], m[1]) for m in batch[:k]]
        return [FakeProposal(layer, ir.with_move(layer, m, src), f"try {m}",
                             {"proposer": self.name, "prompt_hash": f"ph-{layer}-{n}-{i}"})
                for i, (m, src) in enumerate(moves)]


# Move name -> speed factor; moves with other outcomes are keyed by prefix.
DEFAULT_FACTORS = {"a_fast": 2.0, "a_slow": 0.5, "a_same": 1.01, "a_same2": 1.0, "s_fast": 3.0, "s_more": 1.2,
                   "m_fast": 1.5, "m_same": 1.0}
FAILURES = {"crash": ("compile_error", False), "segv": ("crash", True), "hang": ("timeout", True),
            "wrong": ("wrong", True)}


class FakeEvaluator:
    def __init__(self, factors: dict[str, float] | None = None, delay_s: float = 0.0, log_path: Path | None = None):
        self.factors = dict(DEFAULT_FACTORS, **(factors or {}))
        self.calls: list[str] = []
        self.delay_s = delay_s
        self.log_path = log_path

    def __call__(self, source: str) -> dict[str, Any]:
        self.calls.append(source)
        if self.delay_s:
            time.sleep(self.delay_s)
        layers = json.loads(source[len("FAKE "):])
        moves = [m for ms in layers.values() for m in ms]
        for m in moves:
            for prefix, (failure, compiled) in FAILURES.items():
                if m.startswith(prefix):
                    return {"compiled": compiled, "correct": False, "failure": failure,
                            "error": f"{failure} in {m}", "speedup": None, "candidate_ms": None}
        speed = 1.0
        for m in moves:
            speed *= self.factors.get(m, 1.0)
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(json.dumps({"source": source, "speedup": speed}) + "\n")
        return {"compiled": True, "correct": True, "failure": None, "error": None, "speedup": speed,
                "candidate_ms": 10.0 / speed, "baseline_ms": 10.0, "baseline": "tvm-naive",
                "candidate_hash": hashlib.sha256(source.encode()).hexdigest()[:12]}


@dataclass
class FakeTask:
    id: str = "fake-task"


def make_context(run_id: str, store: Any, proposer: ScriptedProposer, evaluator: FakeEvaluator,
                 budget: Any = None, remeasure: Any = None):
    from leka.agent import AgentContext

    kw = {}
    if budget is not None:
        from leka.budget import BudgetExceeded
        kw["budget_errors"] = (BudgetExceeded,)
    return AgentContext(run_id=run_id, task=FakeTask(), target="host-cpu", propose=proposer, evaluate=evaluator,
                        remeasure=remeasure, ir_from_json=FakeIR.from_json, journal=store, budget=budget,
                        proposer_name="scripted", initial_ir=FakeIR().to_json(), **kw)


def test_fake_ir_roundtrip_and_evaluator():
    ir = FakeIR().with_move("algorithm", "a_fast").with_move("schedule", "s_fast")
    assert FakeIR.from_json(ir.to_json()).hash() == ir.hash()
    assert FakeEvaluator()(ir.to_tvmscript(None))["speedup"] == 6.0
    assert FakeEvaluator()(ir.with_move("memory", "hang").to_tvmscript(None))["failure"] == "timeout"
