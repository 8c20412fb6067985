"""Client specs, keys and base URLs, pricing data, retry backoff: the parts that need no server."""
from __future__ import annotations

import json

import pytest

from leka.errors import LekaError
from leka.llm import LLMConfigError, RetryPolicy, cost_usd, make_client
from leka.llm.compat import normalise_base_url
from leka.llm.pricing import lookup_price


@pytest.mark.parametrize("spec", ["", "gpt-4o", "openai:", "mistral:large", "replay:"])
def test_bad_spec_is_a_one_line_error(spec):
    with pytest.raises(LLMConfigError, match="PROVIDER:MODEL") as info:
        make_client(spec)
    assert isinstance(info.value, LekaError) and "\n" not in str(info.value)


def test_missing_keys_and_base_url(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LEKA_COMPAT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        make_client("openai:gpt-4o")
    with pytest.raises(LLMConfigError, match="ANTHROPIC_API_KEY"):
        make_client("anthropic:claude-haiku-4-5")
    with pytest.raises(LLMConfigError, match="--base-url"):
        make_client("compat:llama3")
    monkeypatch.setenv("LEKA_COMPAT_BASE_URL", "http://localhost:11434")
    client = make_client("compat:llama3")  # no key needed
    assert client.base_url == "http://localhost:11434/v1" and client.is_llm


def test_compat_cache_identity_includes_the_server(monkeypatch):
    a = make_client("compat:llama3", base_url="http://hostA:8000/v1")
    b = make_client("compat:llama3", base_url="http://hostB:8000/v1")
    req = {"system": "", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "temperature": 0.0}
    assert a.prompt_hash(req) != b.prompt_hash(req)


@pytest.mark.parametrize("url,expected", [
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ("http://localhost:11434/", "http://localhost:11434/v1"),
    ("https://proxy.example/openai/v1/", "https://proxy.example/openai/v1"),
])
def test_normalise_base_url(url, expected):
    assert normalise_base_url(url) == expected


def test_base_url_must_be_http():
    with pytest.raises(LLMConfigError, match="not an http"):
        normalise_base_url("localhost:8000")


def test_pricing_matches_exact_and_dated_names_only():
    assert lookup_price("openai", "gpt-4o") == (2.5, 10.0)
    assert lookup_price("openai", "gpt-4o-2024-08-06") == (2.5, 10.0)
    assert lookup_price("openai", "gpt-4o-mini") == (0.15, 0.60)
    assert lookup_price("anthropic", "claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert lookup_price("openai", "gpt-4o-audio-preview") is None  # a variant is not the base model
    assert lookup_price("compat", "llama3") is None
    assert cost_usd("openai", "gpt-4o", 1_000_000, 100_000) == pytest.approx(3.5)
    assert cost_usd("openai", "some-new-model", 10, 10) is None


def test_pricing_override_file(tmp_path, monkeypatch):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"compat": {"llama3": [0.1, 0.2]}, "openai": {"gpt-4o": [1, 2]}}))
    monkeypatch.setenv("LEKA_PRICING", str(path))
    assert cost_usd("compat", "llama3", 1_000_000, 1_000_000) == pytest.approx(0.3)
    assert lookup_price("openai", "gpt-4o") == (1.0, 2.0)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    monkeypatch.setenv("LEKA_PRICING", str(bad))
    with pytest.raises(LLMConfigError, match="not a pricing file"):
        lookup_price("openai", "gpt-4o")


def test_backoff_grows_is_capped_and_honours_retry_after():
    policy = RetryPolicy(attempts=6, initial_s=1.0, multiplier=2.0, max_s=5.0, jitter_s=0.0)
    assert [policy.wait_s(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.wait_s(1, retry_after_s=3.0) == 3.0
    assert policy.wait_s(1, retry_after_s=60.0) == 5.0


def test_bad_messages_are_rejected_before_any_request(monkeypatch):
    client = make_client("compat:llama3", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(LekaError, match="role"):
        client.complete("", [{"role": "system", "content": "x"}])
    with pytest.raises(LekaError, match="non-empty"):
        client.complete("", [])
    assert client.stats["requests"] == 0
