"""Proposers: the offline rules ("leka-offline-rules") and LLM-backed proposers (see docs/ir.md)."""
from __future__ import annotations

from typing import Any

from .base import Proposal, ProposalRequest, Proposer
from .offline import NAME as OFFLINE_NAME
from .offline import OfflineProposer

__all__ = ["Proposal", "ProposalRequest", "Proposer", "OfflineProposer", "get_proposer", "OFFLINE_NAME", "PICKS"]


PICKS = ("random", "rules")  # the menu controls: no model, the same menu a model chooses from


def get_proposer(spec: str | None, *, base_url: str | None = None, budget: Any = None,
                 cache_path: Any = None, record: Any = None, variants: dict[str, str] | None = None,
                 pick: str | None = None, seed: int = 0) -> Proposer:
    """None/"offline"/"leka-offline-rules" -> the offline proposer; "provider:model" or "replay:PATH" ->
    an LLMProposer over leka.llm.make_client (menu prompts by default). `variants`: prompt variant per
    layer. `pick` "random"/"rules": the menu controls (no model). `seed`: the attempt's, for the menu."""
    from leka.errors import LekaError

    if pick is not None:
        if pick not in PICKS:
            raise LekaError(f"pick {pick!r}: expected one of {', '.join(PICKS)}")
        if spec not in (None, "", "offline", OFFLINE_NAME) or variants:
            raise LekaError(f"pick={pick} is a control without a model: drop --llm and prompt variants for it")
        from .menu import MenuProposer, RandomChooser, RankChooser

        return MenuProposer(RandomChooser() if pick == "random" else RankChooser(), seed=seed)
    if spec in (None, "", "offline", OFFLINE_NAME):
        if variants:
            raise LekaError("prompt variants need a model (--llm): the offline proposer uses no prompts")
        return OfflineProposer()
    from leka.llm import make_client

    from .llm import LLMProposer

    client = make_client(spec, base_url=base_url, cache=cache_path, recorder=record, budget=budget)
    return LLMProposer(client, spec, variant=dict(variants or {}), seed=seed)
