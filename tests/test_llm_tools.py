"""Native tool use through every client: tools offered in the provider's wire format, tool calls read
back from the reply, tool results sent back as the provider expects; cached and recorded like text."""
from __future__ import annotations

import json

import pytest
from fake_servers import API_KEY, Action, FakeLLMServer

from leka.budget import Budget
from leka.llm import RetryPolicy, make_client

FAST = RetryPolicy(attempts=2, initial_s=0.001, multiplier=2.0, max_s=0.01, jitter_s=0.0)
TOOLS = [{"name": "compile", "description": "build the kernel",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


@pytest.fixture(params=["openai", "anthropic", "compat"])
def server(request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with FakeLLMServer(request.param, lifetime_s=60) as srv:
        yield srv


def _client(server, **kw):
    base = server.url if server.flavor != "openai" else server.url + "/v1"
    return make_client(f"{server.flavor}:m-1", base_url=base, retry=FAST, **kw)


def test_tool_call_round_trip(server, tmp_path):
    budget = Budget.parse("calls=5")
    client = _client(server, budget=budget, recorder=tmp_path / "t.jsonl")
    server.then(Action(text="", tool_calls=[{"name": "compile", "arguments": {"path": "kernel.py"}}]),
                Action(text="done"))
    first = client.complete("sys", [{"role": "user", "content": "go"}], tools=TOOLS)
    assert [(c["name"], c["arguments"]) for c in first.tool_calls] == [("compile", {"path": "kernel.py"})]
    body = server.requests[0]["body"]
    if server.flavor == "anthropic":
        assert body["tools"][0]["input_schema"]["properties"] == {"path": {"type": "string"}}
    else:
        assert body["tools"][0] == {"type": "function", "function": TOOLS[0]}
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": first.text, "tool_calls": list(first.tool_calls)},
                {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "compiled"}]
    second = client.complete("sys", messages, tools=TOOLS)
    assert second.text == "done" and not second.tool_calls
    sent = server.requests[1]["body"]["messages"]
    if server.flavor == "anthropic":
        assert sent[1]["content"][-1]["type"] == "tool_use"
        assert sent[2] == {"role": "user", "content": [{"type": "tool_result", "content": "compiled",
                                                        "tool_use_id": first.tool_calls[0]["id"]}]}
    else:
        call = sent[2]["tool_calls"][0]  # [system, user, assistant, tool]
        assert json.loads(call["function"]["arguments"]) == {"path": "kernel.py"}
        assert sent[3] == {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "compiled"}
    assert budget.spent()["calls"] == 2
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert lines[0]["reply"]["tool_calls"][0]["name"] == "compile"


def test_tool_calls_are_cached_and_replayed(server, tmp_path):
    server.then(Action(text="", tool_calls=[{"name": "compile", "arguments": {}}]))
    client = _client(server, cache=tmp_path / "c.sqlite", recorder=tmp_path / "t.jsonl")
    a = client.complete("sys", [{"role": "user", "content": "go"}], tools=TOOLS)
    b = _client(server, cache=tmp_path / "c.sqlite").complete("sys", [{"role": "user", "content": "go"}], tools=TOOLS)
    assert b.cached and b.tool_calls == a.tool_calls and server.count == 1
    replayed = make_client(f"replay:{tmp_path / 't.jsonl'}").complete("sys", [{"role": "user", "content": "go"}],
                                                                       tools=TOOLS)
    assert replayed.replayed and replayed.tool_calls == a.tool_calls


def test_plain_requests_hash_as_before(server):
    """Offering no tools leaves the request (and so every cache key) as it was."""
    from leka.llm.base import build_request

    assert "tools" not in build_request("s", [{"role": "user", "content": "x"}], 10, 0.0)


SCHEMA = {"name": "menu_picks", "schema": {"type": "object", "required": ["picks"],
                                           "properties": {"picks": {"type": "array", "items": {"type": "string"}}}}}


def test_reply_schema_in_each_wire_format(server):
    """Structured output: OpenAI json_schema, Anthropic a forced answer tool whose input is the reply."""
    client = _client(server)
    answer = {"picks": ["o1a"]}
    server.then(Action(text="", tool_calls=[{"name": "menu_picks", "arguments": answer}])
                if server.flavor == "anthropic" else Action(text=json.dumps(answer)))
    reply = client.complete("sys", [{"role": "user", "content": "pick"}], schema=SCHEMA)
    assert json.loads(reply.text) == answer and not reply.tool_calls
    body = server.requests[0]["body"]
    if server.flavor == "anthropic":
        assert body["tools"][0]["input_schema"] == SCHEMA["schema"]
        assert body["tool_choice"] == {"type": "tool", "name": "menu_picks"}
    else:
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA["schema"]


def test_llama_cpp_python_dialect_and_forced_tool(monkeypatch):
    from leka.llm.compat import CompatClient

    with FakeLLMServer("compat", lifetime_s=60) as srv:
        client = CompatClient("m-1", base_url=srv.url, retry=FAST, schema_dialect="json_object")
        srv.then(Action(text='{"picks": []}'),
                 Action(text="", tool_calls=[{"name": "compile", "arguments": {"path": "k.py"}}]))
        client.complete("sys", [{"role": "user", "content": "pick"}], schema=SCHEMA)
        forced = client.complete("sys", [{"role": "user", "content": "go"}], tools=TOOLS, tool_choice="compile")
        first, second = (r["body"] for r in srv.requests)
    assert first["response_format"] == {"type": "json_object", "schema": SCHEMA["schema"]}
    assert second["tool_choice"] == {"type": "function", "function": {"name": "compile"}}
    assert forced.tool_calls[0]["name"] == "compile"
