"""Anthropic Messages API through the official SDK (its own retries off: ours are counted).

The 2.x SDK has no ``temperature`` parameter on messages.create, so none is sent; the requested
temperature still is part of the prompt hash. Text blocks of the reply are joined; tool_use blocks
become the completion's tool calls; other blocks (thinking) are dropped.
"""
from __future__ import annotations

import json
import os
from typing import Any

import anthropic

from leka.llm.base import LLMClient, RawReply, TransientError, classify_status, parse_retry_after
from leka.llm.errors import LLMConfigError, LLMRequestError, one_line


class AnthropicClient(LLMClient):
    provider = "anthropic"
    key_hint = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, **common: Any) -> None:
        super().__init__(model, **common)
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMConfigError(f"--llm {self.spec} needs ANTHROPIC_API_KEY in the environment")
        self.base_url = base_url
        self._sdk = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s)

    def _send(self, request: dict[str, Any]) -> RawReply:
        params: dict[str, Any] = {"model": self.model, "max_tokens": request["max_tokens"],
                                  "messages": wire_messages(request["messages"])}
        params.update(_wire_tools(request))
        if request["system"]:
            params["system"] = request["system"]
        try:
            resp = self._sdk.messages.create(**params)
        except anthropic.APIStatusError as e:
            raise classify_status(e.status_code, one_line(e.message), self.spec,
                                  parse_retry_after(e.response.headers), self.key_hint) from None
        except anthropic.APIConnectionError as e:  # includes APITimeoutError
            kind = "timeout" if isinstance(e, anthropic.APITimeoutError) else "connection error"
            raise TransientError(f"{kind}: {one_line(e)}") from None
        except anthropic.AnthropicError as e:
            raise LLMRequestError(f"{self.spec}: unusable reply: {one_line(e)}") from None
        blocks = getattr(resp, "content", None)
        if blocks is None:
            raise LLMRequestError(f"{self.spec}: reply has no content")
        if request.get("schema") and not request.get("tools"):
            blocks = _answer_as_text(blocks, request["schema"]["name"])
        usage = getattr(resp, "usage", None)
        input_tokens = getattr(usage, "input_tokens", None) if usage else None
        if input_tokens is not None:  # prompt-cache reads/writes are input too
            input_tokens += (getattr(usage, "cache_creation_input_tokens", None) or 0) + \
                            (getattr(usage, "cache_read_input_tokens", None) or 0)
        return RawReply(
            text="".join(b.text for b in blocks if getattr(b, "type", None) == "text"),
            model=getattr(resp, "model", None) or None, input_tokens=input_tokens,
            output_tokens=getattr(usage, "output_tokens", None) if usage else None,
            finish_reason=getattr(resp, "stop_reason", None),
            tool_calls=[{"id": b.id, "name": b.name, "arguments": dict(b.input or {})}
                        for b in blocks if getattr(b, "type", None) == "tool_use"] or None)


def _wire_tools(request: dict[str, Any]) -> dict[str, Any]:
    """Tools as the Messages API takes them. A reply schema becomes one tool the model must call (the
    API's way to constrain a reply to a JSON schema); a forced tool becomes tool_choice."""
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
             for t in request.get("tools") or ()]
    forced = request.get("tool_choice")
    if request.get("schema") and not tools:
        spec = request["schema"]
        tools, forced = [{"name": spec["name"], "description": "Give the answer.", "input_schema": spec["schema"]}], \
            spec["name"]
    out: dict[str, Any] = {"tools": tools} if tools else {}
    if forced:
        out["tool_choice"] = {"type": "tool", "name": forced}
    return out


class _Text:
    type = "text"

    def __init__(self, text: str) -> None:
        self.text = text


def _answer_as_text(blocks: list[Any], name: str) -> list[Any]:
    """The forced answer tool's input is the reply: JSON text, as other providers return it."""
    answer = [b for b in blocks if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == name]
    return [_Text(json.dumps(dict(answer[0].input or {})))] if answer else list(blocks)


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages -> Messages API turns: tool calls as tool_use blocks of the assistant turn, tool
    results as tool_result blocks of one user turn (consecutive results merged, as the API requires)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
                       for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out
