"""Proposers: the offline rules ("leka-offline-rules") and LLM-backed proposers (see docs/ir.md)."""
from __future__ import annotations

from typing import Any

from .base import Proposal, ProposalRequest, Proposer
from .offline import NAME as OFFLINE_NAME
from .offline import OfflineProposer

__all__ = ["Proposal", "ProposalRequest", "Proposer", "OfflineProposer", "get_proposer", "OFFLINE_NAME"]


def get_proposer(spec: str | None, *, base_url: str | None = None, budget: Any = None,
                 cache_path: Any = None, record: Any = None, variants: dict[str, str] | None = None) -> Proposer:
    """None/"offline"/"leka-offline-rules" -> the offline proposer; "provider:model" or "replay:PATH" ->
    an LLMProposer over leka.llm.make_client. `variants`: prompt variant per layer (default v1)."""
    if spec in (None, "", "offline", OFFLINE_NAME):
        if variants:
            from leka.errors import LekaError

            raise LekaError("prompt variants need a model (--llm): the offline proposer uses no prompts")
        return OfflineProposer()
    from leka.llm import make_client

    from .llm import LLMProposer

    client = make_client(spec, base_url=base_url, cache=cache_path, recorder=record, budget=budget)
    return LLMProposer(client, spec, variant=dict(variants or {}))
