"""Record a run's transcript against a local server, then replay it without network."""
from __future__ import annotations

import json

import pytest
from fake_servers import API_KEY, Action, FakeLLMServer

from leka.budget import Budget, BudgetExceeded
from leka.llm import ReplayError, RetryPolicy, load_transcript, make_client

FAST = RetryPolicy(attempts=3, initial_s=0.001, max_s=0.01, jitter_s=0.0)


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def transcript(tmp_path, monkeypatch):
    """A transcript of three calls (the third a cache hit) recorded from the OpenAI fake."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    path = tmp_path / "run.jsonl"
    with FakeLLMServer("openai") as srv:
        srv.then(Action(text="reply A"), Action(text="reply B"))
        client = make_client("openai:gpt-4o", base_url=srv.url + "/v1", retry=FAST,
                             recorder=path, cache=tmp_path / "cache.sqlite")
        client.complete("sys", ask("A"))
        client.complete("sys", ask("B"), max_tokens=64)
        client.complete("sys", ask("A"))  # cache hit: recorded too, flagged cached
        assert srv.count == 2
    return path


def test_transcript_lines_carry_hash_request_reply_usage(transcript):
    entries = load_transcript(transcript)
    assert [e["reply"]["text"] for e in entries] == ["reply A", "reply B", "reply A"]
    assert [e["cached"] for e in entries] == [False, False, True]
    first = entries[0]
    assert first["provider"] == "openai" and len(first["prompt_hash"]) == 64
    assert first["request"]["messages"] == ask("A") and first["usage"]["input_tokens"] > 0
    assert entries[0]["prompt_hash"] == entries[2]["prompt_hash"]


def test_replay_by_hash_serves_without_network_and_is_not_an_llm(transcript):
    # The server is gone: any request would fail to connect.
    client = make_client(f"replay:{transcript}")
    assert client.is_llm is False
    b = client.complete("sys", ask("B"), max_tokens=64)  # out of recorded order: matched by hash
    a = client.complete("sys", ask("A"))
    assert (b.text, b.provider, b.replayed, b.cached) == ("reply B", "replay", True, False)
    assert a.text == "reply A" and a.prompt_hash == load_transcript(transcript)[0]["prompt_hash"]
    assert client.complete("sys", ask("A")).text == "reply A"  # the second recorded A
    with pytest.raises(ReplayError, match="no recorded reply for this prompt"):
        client.complete("sys", ask("A"))


def test_replay_miss_on_changed_params(transcript):
    client = make_client("openai:ignored", replay=transcript)
    with pytest.raises(ReplayError, match="request"):
        client.complete("sys", ask("B"), max_tokens=65)


def test_replay_in_order_ignores_the_prompt(transcript):
    client = make_client(f"replay-order:{transcript}")
    texts = [client.complete("other", ask(str(i))).text for i in range(3)]
    assert texts == ["reply A", "reply B", "reply A"]
    with pytest.raises(ReplayError, match="left"):
        client.complete("other", ask("4"))


def test_replay_charges_what_the_recorded_run_charged(transcript):
    entries = load_transcript(transcript)
    budget = Budget.parse("calls=2")
    client = make_client(f"replay:{transcript}", budget=budget)
    for text in ("A", "B", "A"):
        client.complete("sys", ask(text), max_tokens=64 if text == "B" else 2048)
    paid = entries[:2]
    assert budget.spent()["calls"] == 2  # the cache hit was free when recorded, and is now
    assert budget.spent()["tokens"] == sum(e["usage"]["input_tokens"] + e["usage"]["output_tokens"]
                                           for e in paid)
    assert budget.spent()["usd"] == pytest.approx(sum(e["cost_usd"] for e in paid))
    tight = make_client(f"replay:{transcript}", budget=Budget.parse("calls=1"))
    tight.complete("sys", ask("A"))
    with pytest.raises(BudgetExceeded):
        tight.complete("sys", ask("B"), max_tokens=64)
    assert tight.remaining == 2  # the refused entry was not consumed


def test_a_replay_can_itself_be_recorded(transcript, tmp_path):
    again = tmp_path / "again.jsonl"
    client = make_client(f"replay:{transcript}", recorder=again)
    client.complete("sys", ask("A"))
    (entry,) = load_transcript(again)
    assert entry["replayed"] and entry["provider"] == "replay" and entry["reply"]["text"] == "reply A"


def test_bad_transcripts_are_one_line_errors(tmp_path):
    with pytest.raises(ReplayError, match="cannot read transcript"):
        make_client(f"replay:{tmp_path / 'missing.jsonl'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"reply": {"text": "x"}}) + "\nnot json\n")
    with pytest.raises(ReplayError, match="line 1"):
        make_client(f"replay:{bad}")
