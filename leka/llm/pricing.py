"""Token prices as data: USD per million input / output tokens, by provider and model.

List prices as published by the providers (checked 2025); verify before relying on the dollar
figures, and override with a JSON file of the same shape via LEKA_PRICING=path.json
({"openai": {"gpt-4o": [2.5, 10.0]}, ...}). A model is priced if its name equals an entry or is an
entry plus a date/"-latest" suffix ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929"); any other
model (local models behind compat:, new releases) has cost None — its tokens are still counted.
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache

from leka.llm.errors import LLMConfigError

# (input $/Mtok, output $/Mtok)
PRICES_PER_MTOK: dict[str, dict[str, tuple[float, float]]] = {
    "openai": {
        "gpt-5": (1.25, 10.0),
        "gpt-5-mini": (0.25, 2.0),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-4.1": (2.0, 8.0),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4o": (2.50, 10.0),
        "gpt-4o-mini": (0.15, 0.60),
        "o3": (2.0, 8.0),
        "o3-mini": (1.10, 4.40),
        "o4-mini": (1.10, 4.40),
    },
    "anthropic": {
        "claude-opus-4-5": (5.0, 25.0),
        "claude-opus-4-1": (15.0, 75.0),
        "claude-opus-4": (15.0, 75.0),
        "claude-sonnet-4-5": (3.0, 15.0),
        "claude-sonnet-4": (3.0, 15.0),
        "claude-3-7-sonnet": (3.0, 15.0),
        "claude-haiku-4-5": (1.0, 5.0),
        "claude-3-5-haiku": (0.80, 4.0),
    },
}

_SUFFIX = re.compile(r"(-\d{4}-?\d{2}-?\d{2}|-latest)?")


@lru_cache(maxsize=4)
def _override(path: str) -> dict[str, dict[str, tuple[float, float]]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return {p: {m: (float(v[0]), float(v[1])) for m, v in models.items()} for p, models in data.items()}
    except (OSError, ValueError, TypeError, IndexError, AttributeError) as e:
        raise LLMConfigError(f"LEKA_PRICING={path}: not a pricing file ({e})") from None


def price_table() -> dict[str, dict[str, tuple[float, float]]]:
    table = {p: dict(models) for p, models in PRICES_PER_MTOK.items()}
    path = os.environ.get("LEKA_PRICING")
    if path:
        for provider, models in _override(path).items():
            table.setdefault(provider, {}).update(models)
    return table


def lookup_price(provider: str, model: str) -> tuple[float, float] | None:
    models = price_table().get(provider, {})
    if model in models:
        return models[model]
    # Longest entry that the model name extends by a date suffix only.
    for name in sorted(models, key=len, reverse=True):
        if model.startswith(name) and _SUFFIX.fullmatch(model[len(name):]):
            return models[name]
    return None


def cost_usd(provider: str, model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of one call at list price, or None when the model is not in the table."""
    price = lookup_price(provider, model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1e6
