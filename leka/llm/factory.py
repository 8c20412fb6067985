"""``make_client(spec)``: "openai:MODEL", "anthropic:MODEL", "compat:MODEL" (+ base URL),
"local:gemma3-270m" / "local:PATH.gguf" (a running local server, leka.llm.local),
"replay:PATH" (or "replay-order:PATH" to serve a transcript in file order)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from leka.budget import Budget
from leka.llm.base import LLMClient, RetryPolicy
from leka.llm.cache import ResponseCache
from leka.llm.errors import LLMConfigError
from leka.llm.record import Recorder, ReplayClient

RECORD_ENV = "LEKA_LLM_RECORD"  # a JSONL path: every model client without its own recorder records there
PROVIDERS = ("openai", "anthropic", "compat", "local", "replay", "replay-order")

PathLike = str | os.PathLike[str]


def _open_cache(cache: ResponseCache | PathLike | bool | None) -> ResponseCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResponseCache()  # default .leka/llm_cache.sqlite
    return cache if isinstance(cache, ResponseCache) else ResponseCache(cache)


def _open_recorder(recorder: Any) -> Any:
    if recorder is None or hasattr(recorder, "write"):
        return recorder
    return Recorder(recorder)


def make_client(spec: str, *, base_url: str | None = None,
                cache: ResponseCache | PathLike | bool | None = None,
                recorder: Recorder | PathLike | None = None, replay: PathLike | None = None,
                budget: Budget | None = None, retry: RetryPolicy | None = None,
                timeout_s: float = 120.0) -> LLMClient:
    """Build a client. ``cache``: None/False off, True for .leka/llm_cache.sqlite, or a path/cache.
    ``recorder``: a JSONL path (or Recorder) to record the transcript to. ``replay``: a transcript
    path to serve instead of the network (same as spec "replay:PATH")."""
    provider, sep, rest = (spec or "").partition(":")
    provider = provider.strip().lower()
    if replay is not None:
        provider, rest, sep = "replay", str(replay), ":"
    if not sep or provider not in PROVIDERS or not rest.strip():
        raise LLMConfigError(f"bad --llm {spec!r}: expected PROVIDER:MODEL with PROVIDER one of "
                             f"openai, anthropic, compat (OpenAI-compatible server, needs --base-url), "
                             f"local (local:gemma3-270m or local:PATH.gguf), or replay:PATH")
    rest = rest.strip()
    if recorder is None and os.environ.get(RECORD_ENV) and not provider.startswith("replay"):
        recorder = os.environ[RECORD_ENV]  # every real reply of this process tree goes to that transcript
    rec = _open_recorder(recorder)
    if provider.startswith("replay"):
        return ReplayClient(Path(rest), mode="order" if provider == "replay-order" else "hash",
                            recorder=rec, budget=budget)
    common: dict[str, Any] = {"cache": _open_cache(cache), "recorder": rec, "budget": budget,
                              "retry": retry, "timeout_s": timeout_s, "base_url": base_url}
    if provider == "openai":
        from leka.llm.openai_client import OpenAIClient
        return OpenAIClient(rest, **common)
    if provider == "anthropic":
        from leka.llm.anthropic_client import AnthropicClient
        return AnthropicClient(rest, **common)
    if provider == "local":
        from leka.llm.local.client import make_local_client
        return make_local_client(rest, **common)
    from leka.llm.compat import CompatClient
    return CompatClient(rest, **common)
