"""Any OpenAI-compatible server by base URL: vLLM (http://HOST:8000/v1), Ollama
(http://HOST:11434/v1), llama.cpp's llama-server (http://HOST:8080/v1), LM Studio, proxies.

Differences from the OpenAI client: the base URL is required (``--base-url`` or
LEKA_COMPAT_BASE_URL), a key is optional (LEKA_COMPAT_API_KEY; OPENAI_API_KEY is never sent to a
third-party server), ``max_tokens`` is sent (not every server knows max_completion_tokens), the
temperature always is, and the base URL is part of the cache key: one model name can mean
different weights on two servers. Local models are not in the pricing table, so cost is None.
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from leka.llm.errors import LLMConfigError
from leka.llm.openai_client import OpenAIClient, wire_messages, wire_schema, wire_tools

SCHEMA_DIALECTS = ("json_schema", "json_object")

EXAMPLE_URLS = ("vLLM http://localhost:8000/v1, Ollama http://localhost:11434/v1, "
                "llama.cpp http://localhost:8080/v1")


def normalise_base_url(url: str) -> str:
    """Strip the trailing slash; a bare host:port gets the conventional /v1."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LLMConfigError(f"base URL {url!r} is not an http(s) URL; e.g. {EXAMPLE_URLS}")
    url = url.rstrip("/")
    return url if parts.path.strip("/") else url + "/v1"


class CompatClient(OpenAIClient):
    provider = "compat"
    key_hint = "LEKA_COMPAT_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 schema_dialect: str = "json_schema", **kw: Any) -> None:
        if schema_dialect not in SCHEMA_DIALECTS:
            raise LLMConfigError(f"schema dialect {schema_dialect!r}: expected one of {', '.join(SCHEMA_DIALECTS)}")
        self.schema_dialect = schema_dialect
        url = base_url or os.environ.get("LEKA_COMPAT_BASE_URL")
        if not url:
            raise LLMConfigError(f"--llm compat:{model} needs --base-url (or LEKA_COMPAT_BASE_URL); "
                                 f"e.g. {EXAMPLE_URLS}")
        self.model = model
        super().__init__(model, base_url=normalise_base_url(url), api_key=api_key, **kw)

    def _api_key(self, api_key: str | None) -> str:
        # The SDK insists on a key string; servers without auth ignore it.
        return api_key or os.environ.get("LEKA_COMPAT_API_KEY") or "no-key"

    @property
    def cache_identity(self) -> str:
        return f"compat@{self.base_url}"

    def _params(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.model, "messages": wire_messages(request),
                "max_tokens": request["max_tokens"], "temperature": request["temperature"], **wire_tools(request),
                **wire_schema(request, self.schema_dialect)}
