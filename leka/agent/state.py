"""Typed, JSON-serialisable state of one LEKA run (what LangGraph checkpoints after every node).

Everything here is plain data: the IR travels as its JSON form (``CandidateIR.to_json()``), so a
checkpoint can be reloaded in a fresh process and the run resumed exactly where it stopped.
"""
from __future__ import annotations

import operator
from dataclasses import asdict, dataclass
from typing import Annotated, Any, TypedDict

LAYERS: tuple[str, ...] = ("algorithm", "schedule", "memory")


@dataclass(frozen=True)
class Policy:
    """When to retry, advance, backtrack or stop (see graph.decide)."""

    k: int = 2  # proposals asked per step
    plateau_pct: float = 3.0  # a step that gains less than this (%) counts as a stall
    plateau_steps: int = 2  # this many stalls in a row at a layer -> advance to the next layer
    max_retries: int = 2  # failing steps in a row at a layer before it is given up (treated as exhausted)
    max_steps: int = 24  # hard cap on steps per run, whatever the budget says
    history_len: int = 24  # feedback entries handed to the proposer
    control: bool = True  # first schedule step on a rewritten algorithm also schedules the task's own
    layers: tuple[str, ...] = ("algorithm", "schedule", "memory")  # layers walked (ablation: fewer)
    # Stop once a step measured the baseline at or under this many ms and nothing has beaten the start yet:
    # a launch-bound kernel with no headroom (remote runs: each further step is a GPU round). None: never.
    no_headroom_ms: float | None = None

    def __post_init__(self) -> None:
        walked = tuple(parse_layers(self.layers))
        object.__setattr__(self, "layers", walked)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["layers"] = list(self.layers)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Policy":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def parse_layers(spec: Any) -> list[str]:
    """"schedule", "algorithm+schedule", or a list of layer names -> the walked layers in IR order."""
    names = spec.split("+") if isinstance(spec, str) else list(spec)
    names = [str(n).strip() for n in names if str(n).strip()]
    unknown = sorted(set(names) - set(LAYERS))
    if unknown or not names:
        from leka.errors import LekaError

        raise LekaError(f"layers {spec!r}: expected layer names joined by '+' from {', '.join(LAYERS)}")
    return [name for name in LAYERS if name in names]


class LayerStatus(TypedDict):
    steps: int  # steps run at this layer
    stall: int  # consecutive steps without a gain >= plateau_pct
    fails: int  # consecutive steps with no correct candidate
    exhausted: bool  # proposer had nothing new (or fails ran past max_retries) for the current base IR
    accepted: int  # decisions accepted at this layer


class CandidateRecord(TypedDict, total=False):
    index: int
    summary: str  # one line for tables: the rule and the lines it added
    ir_summary: str  # ir.summary(layer), handed back to the proposer as history
    rationale: str
    diff: str
    ir_hash: str
    proposer: str
    prompt_hash: str | None
    tokens: int | None
    cost_usd: float | None
    cached: bool | None
    replayed: bool | None
    valid: bool
    compiled: bool
    correct: bool
    failure: str | None  # evaluator failure, or "invalid" / "duplicate" / "evaluator_error"
    error: str | None
    speedup: float | None
    candidate_ms: float | None
    baseline_ms: float | None
    source_hash: str | None
    control: bool  # built on the task's own algorithm while the best has a rewritten one (see nodes)
    remote: dict[str, Any]  # the remote host's job that measured it (leka/remote/judge.py)
    menu: dict[str, Any]  # a menu pick: size, position shown, offline rank, id (leka.proposers.menu)


class StepRecord(TypedDict, total=False):
    step: int
    layer: str
    outcome: str  # "improved" | "no_gain" | "failed" | "bad_reply" | "exhausted" | "budget"
    candidates: list[CandidateRecord]
    accepted: int | None  # index into candidates
    base: int | None  # index of the candidate kept as the base for the layers below (not faster itself)
    best_before: float
    best_after: float
    error: str | None
    cut_off: str  # the step ran past its deadline: where it was (leka.agent.deadline)
    cut_off_rule: str  # the offline rule the cut-off proposer was inside, when known
    budget_spent: dict[str, Any]
    elapsed_s: float
    decision: str  # filled by the router: continue|retry|advance|backtrack|stop
    next: str  # node the router chose
    reason: str


class Best(TypedDict):
    ir: dict[str, Any]  # CandidateIR JSON
    speedup: float
    candidate_ms: float | None
    step: int | None  # None = the initial (unoptimised) IR
    layer: str | None
    summary: str


class Decision(TypedDict):
    decision: str
    next: str
    reason: str


class AgentState(TypedDict, total=False):
    run_id: str
    task: str
    target: str
    proposer: str
    policy: dict[str, Any]
    layer: str  # layer the next step runs at
    best: Best
    # IR the next steps build on when it is not best["ir"]: a correct algorithm rewrite that is not faster
    # by itself but opens schedules (padding, scan lanes, fusion); None = build on the best
    base: dict[str, Any] | None
    # the IR the run started from: the first schedule step after an algorithm rewrite also schedules it
    origin: dict[str, Any] | None
    layers: dict[str, LayerStatus]
    seen: list[str]  # IR hashes already evaluated (or proposed), to spot "nothing new"
    steps: Annotated[list[StepRecord], operator.add]  # append-only step log
    decision: Decision  # routing decision after the latest node
    stop_reason: str | None
    final: dict[str, Any] | None


def initial_state(run_id: str, task_id: str, target: str, proposer: str, policy: Policy,
                  initial_ir: dict[str, Any], initial_summary: str = "initial IR",
                  initial_speedup: float = 1.0) -> AgentState:
    """initial_speedup: 1.0 when the initial IR is itself a runnable kernel (the naive lowering on CPU);
    0.0 when it is not (unbound blocks on a GPU target), so the first correct candidate is accepted."""
    return AgentState(
        run_id=run_id, task=task_id, target=target, proposer=proposer, policy=policy.to_json(),
        layer=LAYERS[0], origin=initial_ir,
        best=Best(ir=initial_ir, speedup=initial_speedup, candidate_ms=None, step=None, layer=None, summary=initial_summary),
        layers={name: LayerStatus(steps=0, stall=0, fails=0, exhausted=False, accepted=0) for name in LAYERS},
        seen=[], steps=[], decision=Decision(decision="start", next=LAYERS[0], reason="start"),
        stop_reason=None, final=None,
    )
