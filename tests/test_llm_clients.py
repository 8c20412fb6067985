"""LLM clients against local servers speaking each wire format (OpenAI, Anthropic, OpenAI-compatible):
success, retried 429/500/timeouts, unretried 401/4xx, parse feedback, cache hits, budget charging."""
from __future__ import annotations

import json

import pytest
from fake_servers import API_KEY, Action, FakeLLMServer

from leka.budget import Budget, BudgetExceeded
from leka.llm import (LLMAuthError, LLMReplyError, LLMRequestError, ResponseCache, RetryPolicy,
                      make_client)

FAST = RetryPolicy(attempts=4, initial_s=0.001, multiplier=2.0, max_s=0.01, jitter_s=0.0)
MODELS = {"openai": "gpt-4o", "anthropic": "claude-haiku-4-5", "compat": "qwen2.5-coder:7b"}
USER = [{"role": "user", "content": "Write the kernel."}]


@pytest.fixture(params=["openai", "anthropic", "compat"])
def server(request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with FakeLLMServer(request.param, lifetime_s=60) as srv:
        yield srv


def client_for(server: FakeLLMServer, **kw):
    base = {"openai": server.url + "/v1", "anthropic": server.url,
            "compat": server.url}[server.flavor]  # compat: a bare host:port gets /v1 added
    kw.setdefault("retry", FAST)
    return make_client(f"{server.flavor}:{MODELS[server.flavor]}", base_url=base, **kw)


def sent_body(server: FakeLLMServer, i: int = -1) -> dict:
    return server.requests[i]["body"]


def test_success_speaks_the_wire_format(server):
    client = client_for(server)
    server.then(Action(text="def main(): pass"))
    c = client.complete("You write TVMScript.", USER, max_tokens=300, temperature=0.0)
    assert server.count == 1
    assert (c.text, c.provider, c.cached, c.replayed, c.attempts) == (
        "def main(): pass", server.flavor, False, False, 1)
    assert c.input_tokens > 0 and c.output_tokens > 0 and not c.usage_estimated
    body, headers = sent_body(server), server.requests[-1]["headers"]
    assert body["model"] == MODELS[server.flavor]
    if server.flavor == "anthropic":
        assert body["system"] == "You write TVMScript." and body["messages"] == USER
        assert body["max_tokens"] == 300 and "anthropic-version" in headers
        assert c.finish_reason == "end_turn" and c.cost_usd == pytest.approx(
            (c.input_tokens * 1.0 + c.output_tokens * 5.0) / 1e6)
    else:
        assert body["messages"][0] == {"role": "system", "content": "You write TVMScript."}
        assert body["messages"][1:] == USER and body["temperature"] == 0.0
        if server.flavor == "openai":
            assert body["max_completion_tokens"] == 300
            assert headers["authorization"] == f"Bearer {API_KEY}"
            assert c.cost_usd == pytest.approx((c.input_tokens * 2.5 + c.output_tokens * 10.0) / 1e6)
        else:
            assert body["max_tokens"] == 300 and c.cost_usd is None  # local model: unpriced


@pytest.mark.parametrize("status", [429, 500])
def test_transient_error_is_retried(server, status):
    client = client_for(server)
    server.then(Action(status=status), Action(text="ok after retry"))
    c = client.complete("", USER)
    assert c.text == "ok after retry" and c.attempts == 2 and server.count == 2
    assert client.stats["retries"] == 1 and client.stats["requests"] == 2


def test_retries_are_bounded(server):
    client = client_for(server)
    server.then(*[Action(status=503)] * 10)
    with pytest.raises(LLMRequestError, match="after 4 attempt") as info:
        client.complete("", USER)
    assert server.count == FAST.attempts == info.value.attempts and info.value.status == 503


def test_timeout_is_retried(server):
    client = client_for(server, timeout_s=0.3)
    server.then(Action(delay_s=1.0, text="too late"), Action(text="in time"))
    c = client.complete("", USER)
    assert c.text == "in time" and c.attempts == 2


def test_401_is_not_retried(server):
    client = client_for(server)
    server.then(Action(status=401))
    with pytest.raises(LLMAuthError, match="401"):
        client.complete("", USER)
    assert server.count == 1


def test_wrong_key_is_refused_once(server, monkeypatch):
    if server.flavor == "compat":
        pytest.skip("compat servers take no key")
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    with pytest.raises(LLMAuthError, match="_API_KEY"):
        client_for(server).complete("", USER)
    assert server.count == 1


def test_other_4xx_is_not_retried(server):
    server.then(Action(status=400))
    with pytest.raises(LLMRequestError, match="400"):
        client_for(server).complete("", USER)
    assert server.count == 1


def parse_json_object(text: str) -> dict:
    value = json.loads(text)  # JSONDecodeError is a ValueError
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


def test_malformed_reply_is_fed_back_once(server):
    client = client_for(server)
    server.then(Action(text="Sure! here it is: {oops"), Action(text='{"tile": 8}'))
    value, completions = client.complete_parsed("Reply in JSON.", USER, parse_json_object)
    assert value == {"tile": 8} and len(completions) == 2 and server.count == 2
    second = sent_body(server)["messages"]
    assert second[-2] == {"role": "assistant", "content": "Sure! here it is: {oops"}
    with pytest.raises(ValueError) as parse_error:
        parse_json_object("Sure! here it is: {oops")
    assert second[-1]["role"] == "user" and str(parse_error.value) in second[-1]["content"]
    assert second[:-2] == sent_body(server, 0)["messages"]  # the original conversation, unchanged


def test_second_parse_failure_raises_with_both_completions(server):
    client = client_for(server)
    server.then(Action(text="[1]"), Action(text="still [2]"))
    with pytest.raises(LLMReplyError) as info:
        client.complete_parsed("Reply in JSON.", USER, parse_json_object)
    assert [c.text for c in info.value.completions] == ["[1]", "still [2]"]
    assert "expected a JSON object" in info.value.errors[0] and server.count == 2


def test_cache_hit_makes_no_request_and_charges_nothing(server, tmp_path):
    budget = Budget.parse("calls=5")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = client_for(server, cache=cache, budget=budget)
    server.then(Action(text="first"), Action(text="second"))
    a = client.complete("sys", USER)
    spent = budget.spent()
    b = client.complete("sys", USER)
    assert server.count == 1 and b.cached and not a.cached
    assert (b.text, b.prompt_hash, b.input_tokens) == ("first", a.prompt_hash, a.input_tokens)
    assert {k: v for k, v in budget.spent().items() if k != "minutes"} == \
        {k: v for k, v in spent.items() if k != "minutes"}
    # A new client on the same file (a rerun) hits too; other params or samples miss.
    rerun = client_for(server, cache=tmp_path / "cache.sqlite")
    assert rerun.complete("sys", USER).cached and server.count == 1
    assert not rerun.complete("sys", USER, temperature=0.7).cached
    assert not rerun.complete("sys", USER, sample=1).cached
    assert server.count == 3


def test_budget_refuses_before_sending(server):
    budget = Budget.parse("calls=1")
    client = client_for(server, budget=budget)
    c = client.complete("", USER)
    with pytest.raises(BudgetExceeded, match="calls"):
        client.complete("", USER + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}])
    assert server.count == 1
    spent = budget.spent()
    assert spent["calls"] == 1 and spent["tokens"] == c.input_tokens + c.output_tokens
    if c.cost_usd is not None:
        assert spent["usd"] == pytest.approx(c.cost_usd)


def test_token_budget_refuses_a_call_that_might_not_fit(server):
    budget = Budget.parse("tokens=1000")
    client = client_for(server, budget=budget)
    with pytest.raises(BudgetExceeded, match="tokens"):
        client.complete("", USER, max_tokens=2048)  # worst case > 1000
    assert server.count == 0 and budget.spent()["calls"] == 0
    client.complete("", USER, max_tokens=100)
    assert server.count == 1


def test_missing_usage_is_estimated(server):
    server.then(Action(text="x" * 40, usage=False))
    c = client_for(server).complete("", USER)
    assert c.usage_estimated and c.output_tokens == 10 and c.input_tokens > 0
