"""OpenAI chat completions through the official SDK (its own retries off: ours are counted)."""
from __future__ import annotations

import json
import os
import re
from typing import Any

import openai

from leka.llm.base import LLMClient, RawReply, TransientError, classify_status, parse_retry_after
from leka.llm.errors import LLMConfigError, LLMRequestError, one_line

# Reasoning models accept only the default temperature; sending 0.0 gets a 400.
_FIXED_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")


class OpenAIClient(LLMClient):
    provider = "openai"
    key_hint = "OPENAI_API_KEY"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, **common: Any) -> None:
        super().__init__(model, **common)
        self.base_url = base_url
        self._sdk = openai.OpenAI(api_key=self._api_key(api_key), base_url=base_url,
                                  max_retries=0, timeout=timeout_s)

    def _api_key(self, api_key: str | None) -> str:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise LLMConfigError(f"--llm {self.spec} needs OPENAI_API_KEY in the environment")
        return key

    def _params(self, request: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": wire_messages(request),
                                  "max_completion_tokens": request["max_tokens"], **wire_tools(request),
                                  **wire_schema(request)}
        if not _FIXED_TEMPERATURE.match(self.model):
            params["temperature"] = request["temperature"]
        return params

    def _send(self, request: dict[str, Any]) -> RawReply:
        try:
            resp = self._sdk.chat.completions.create(**self._params(request))
        except openai.APIStatusError as e:
            raise classify_status(e.status_code, one_line(e.message), self.spec,
                                  parse_retry_after(e.response.headers), self.key_hint) from None
        except openai.APIConnectionError as e:  # includes APITimeoutError
            kind = "timeout" if isinstance(e, openai.APITimeoutError) else "connection error"
            raise TransientError(f"{kind}: {one_line(e)}") from None
        except openai.OpenAIError as e:  # e.g. a body that is not a chat completion
            raise LLMRequestError(f"{self.spec}: unusable reply: {one_line(e)}") from None
        return _reply_from_chat(resp, self.spec)


def wire_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Neutral messages -> chat-completions messages (tool calls as function calls, results as role tool)."""
    out = [{"role": "system", "content": request["system"]}] if request["system"] else []
    for m in request["messages"]:
        if m.get("tool_calls"):
            out.append({"role": "assistant", "content": m["content"] or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in m["tool_calls"]]})
        else:
            out.append(dict(m))
    return out


def wire_tools(request: dict[str, Any]) -> dict[str, Any]:
    if not request.get("tools"):
        return {}
    out: dict[str, Any] = {"tools": [{"type": "function", "function": dict(t)} for t in request["tools"]]}
    if request.get("tool_choice"):
        out["tool_choice"] = {"type": "function", "function": {"name": request["tool_choice"]}}
    return out


def wire_schema(request: dict[str, Any], dialect: str = "json_schema") -> dict[str, Any]:
    """Structured output. "json_schema": OpenAI, vLLM and llama.cpp's llama-server; "json_object":
    llama-cpp-python's server, which reads {"type": "json_object", "schema": ...} and ignores the other."""
    spec = request.get("schema")
    if not spec:
        return {}
    if dialect == "json_object":
        return {"response_format": {"type": "json_object", "schema": spec["schema"]}}
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": spec["name"], "schema": spec["schema"], "strict": False}}}


def _tool_calls(message: Any) -> list[dict[str, Any]] | None:
    calls = getattr(message, "tool_calls", None) if message is not None else None
    if not calls:
        return None
    out = []
    for c in calls:
        fn = getattr(c, "function", None)
        try:
            args = json.loads(getattr(fn, "arguments", None) or "{}")
        except ValueError:  # the tool loop reports unparseable arguments back to the model
            args = {"_unparsed": getattr(fn, "arguments", "")}
        out.append({"id": getattr(c, "id", ""), "name": getattr(fn, "name", ""),
                    "arguments": args if isinstance(args, dict) else {"_unparsed": args}})
    return out


def _reply_from_chat(resp: Any, spec: str) -> RawReply:
    choices = getattr(resp, "choices", None)
    if not choices:
        raise LLMRequestError(f"{spec}: reply has no choices")
    message = choices[0].message
    usage = getattr(resp, "usage", None)
    return RawReply(
        text=(message.content if message is not None else None) or "",
        model=getattr(resp, "model", None) or None,
        input_tokens=getattr(usage, "prompt_tokens", None) if usage else None,
        output_tokens=getattr(usage, "completion_tokens", None) if usage else None,
        finish_reason=choices[0].finish_reason, tool_calls=_tool_calls(message))
