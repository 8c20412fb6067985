"""``--llm local:MODEL``: the OpenAI-compatible client pointed at a local server the project started.

It is CompatClient (same cache, recorder, budget, retries and error mapping) with three differences:
- the server is found from its state file (leka.llm.local.server), not given as a base URL;
- the cache key names the weights and chat template (``model_id``), not the port, which changes per start;
- requests are streamed. llama-cpp-python's server generates a non-streamed reply to the end even after
  the client has gone (a step cut off at its deadline kills the process that waits), but stops a streamed
  one at the next token once the connection is closed. The stream is folded back into one reply here, so
  the rest of the pipeline sees a plain chat completion. Streamed replies carry no usage: output tokens
  are the streamed chunks (one per token), input tokens the server's tokenizer count of the message texts
  (/extras/tokenize/count; the chat template's few marker tokens are not in it);
- an assistant turn with tool calls only is sent with content "" (the server's schema refuses null).
"""
from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace
from typing import Any

import httpx
import openai

from leka.llm.compat import CompatClient
from leka.llm.errors import LLMConfigError
from leka.llm.local.server import ServerState, find_server
from leka.llm.local.speed import local_limits


def _fold_tool_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    for d in getattr(delta, "tool_calls", None) or []:
        call = calls.setdefault(d.index or 0, {"id": "", "name": "", "arguments": ""})
        call["id"] = d.id or call["id"]
        fn = getattr(d, "function", None)
        if fn is not None:
            call["name"] = fn.name or call["name"]
            call["arguments"] += fn.arguments or ""


def fold_stream(stream: Any) -> SimpleNamespace:
    """A streamed chat completion as one (the attributes _reply_from_chat reads), usage.completion_tokens
    counting the chunks that carried text or tool-call arguments."""
    calls: dict[int, dict[str, Any]] = {}
    text, chunks, model, finish = [], 0, None, None
    for chunk in stream:
        model = getattr(chunk, "model", None) or model
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None:
            text.append(delta.content or "")
            _fold_tool_delta(calls, delta)
            chunks += bool(delta.content or getattr(delta, "tool_calls", None))
        finish = choice.finish_reason or finish
    tool_calls = [SimpleNamespace(id=c["id"], function=SimpleNamespace(name=c["name"], arguments=c["arguments"]))
                  for _, c in sorted(calls.items())] or None
    message = SimpleNamespace(content="".join(text), tool_calls=tool_calls)
    usage = SimpleNamespace(prompt_tokens=None, completion_tokens=chunks)
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason=finish)], model=model, usage=usage)


class _StreamingCompletions:
    """Stands in for sdk.chat.completions: create() streams and returns the folded reply. Transport errors
    in mid-stream become the SDK's connection/timeout errors, which the client retries as usual."""

    def __init__(self, completions: Any, count_url: str) -> None:
        self._completions, self._count_url = completions, count_url

    def create(self, **params: Any) -> SimpleNamespace:
        # llama-cpp-python's request schema refuses an assistant turn whose content is null (tool calls only)
        params["messages"] = [dict(m, content="") if m.get("content", "") is None else m for m in params["messages"]]
        stream = self._completions.create(**params, stream=True)
        try:
            reply = fold_stream(stream)
        except httpx.TimeoutException:  # (openai >= 3 streams through httpx2 and maps these errors itself)
            raise openai.APITimeoutError(request=stream.response.request) from None
        except httpx.HTTPError as e:
            raise openai.APIConnectionError(message=str(e), request=stream.response.request) from None
        finally:
            stream.close()
        reply.usage.prompt_tokens = self._count_tokens(params)
        return reply

    def _count_tokens(self, params: dict[str, Any]) -> int | None:
        parts = [m.get("content") or "" for m in params["messages"]]
        parts += [json.dumps(m["tool_calls"]) for m in params["messages"] if m.get("tool_calls")]
        parts += [json.dumps(params["tools"])] if params.get("tools") else []
        body = json.dumps({"input": "\n".join(parts), "model": params.get("model")}).encode()
        req = urllib.request.Request(self._count_url, data=body, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(json.load(resp)["count"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # the client estimates (Completion.usage_estimated)


class LocalClient(CompatClient):
    provider = "local"
    key_hint = ""
    forces_tools = True  # llama.cpp's server calls a tool only when the call is forced (codeloop: tool_choice)

    def __init__(self, server: ServerState, **kw: Any) -> None:
        # llama-cpp-python reads a reply schema as {"type": "json_object", "schema": ...} only
        super().__init__(server.name, base_url=server.base_url, schema_dialect="json_object", **kw)
        self.server = server
        self.local_speed: dict[str, Any] | None = server.speed  # measured when the server started
        count_url = server.base_url.removesuffix("/v1") + "/extras/tokenize/count"
        # openai types its settable cached_property `chat` as a read-only property; the stand-in has create() only
        self._sdk.chat = SimpleNamespace(  # type: ignore[misc, assignment]
            completions=_StreamingCompletions(self._sdk.chat.completions, count_url))

    @property
    def cache_identity(self) -> str:
        return f"local@{self.server.model_id}"

    def limits(self, **kw: Any) -> dict[str, Any]:
        """max_tokens and seconds per call sized from the measured speed (see local_limits)."""
        return local_limits(self.server, **kw)


def make_local_client(model: str, *, base_url: str | None = None, **common: Any) -> LocalClient:
    """The client of `--llm local:MODEL`: a running server of MODEL (leka llm serve, or the one the command
    started), else a one-line error saying how to start one."""
    from leka.llm.local.models import parse_model

    if base_url:
        raise LLMConfigError(f"--llm local:{model} runs its own server: drop --base-url (or use compat:)")
    server = find_server(parse_model(model).key)
    if server is None:
        raise LLMConfigError(f"no local model server of {model} is running: start one with "
                             f"`leka llm serve --model {model}` (the leka commands taking --llm start one themselves)")
    return LocalClient(server, **common)
