"""The proposer interface: given a layer, the current IR and feedback, propose new candidate IRs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from leka.ir import CandidateIR


@dataclass
class ProposalRequest:
    layer: str  # "algorithm" | "schedule" | "memory"
    ir: CandidateIR
    task: Any  # leka.tasks.Task
    target: Any  # TargetPreset (or a name get_target accepts)
    history: list[dict[str, Any]] = field(default_factory=list)
    # history entries: {"layer", "summary", "compiled", "correct", "failure", "error", "speedup", "candidate_ms"}
    k: int = 4
    # the layers the run walks: a proposal must not carry decisions of a layer left out (the "schedule
    # only" ablation gets no cache_read/cache_write, which some schedule rules would add)
    walked: tuple[str, ...] = ("algorithm", "schedule", "memory")


@dataclass
class Proposal:
    layer: str
    ir: CandidateIR
    rationale: str
    meta: dict[str, Any] = field(default_factory=dict)  # proposer, prompt_hash, tokens, cost_usd, cached, replayed


@runtime_checkable
class Proposer(Protocol):
    name: str
    is_llm: bool

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        """New candidates for req.layer; [] when this layer has nothing more to offer."""
        ...
