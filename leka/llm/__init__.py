"""LLM clients (OpenAI, Anthropic, OpenAI-compatible servers), response cache, record/replay.

    client = make_client("anthropic:claude-sonnet-4-5", cache=True, budget=budget)
    c = client.complete(system, [{"role": "user", "content": "..."}])
    value, completions = client.complete_parsed(system, messages, parse=my_parser)

See docs/llm.md.
"""
from leka.llm.base import Completion, LLMClient, RetryPolicy
from leka.llm.cache import ResponseCache, default_cache_path
from leka.llm.errors import (LLMAuthError, LLMConfigError, LLMError, LLMReplyError, LLMRequestError,
                             ReplayError)
from leka.llm.factory import PROVIDERS, make_client
from leka.llm.pricing import cost_usd
from leka.llm.record import Recorder, ReplayClient, load_transcript

__all__ = [
    "Completion", "LLMClient", "RetryPolicy", "ResponseCache", "default_cache_path", "LLMAuthError",
    "LLMConfigError", "LLMError", "LLMReplyError", "LLMRequestError", "ReplayError", "PROVIDERS",
    "make_client", "cost_usd", "Recorder", "ReplayClient", "load_transcript",
]
