"""LLMProposer over a scripted leka.llm client (no network), record/replay, prompt templates."""
from __future__ import annotations

import json

import pytest

from leka.errors import LekaError
from leka.ir import CandidateIR
from leka.llm import LLMReplyError, Recorder
from leka.llm.base import LLMClient, RawReply
from leka.proposers import ProposalRequest, get_proposer
from leka.proposers.llm import LLMProposer
from leka.proposers.prompting import render
from leka.tasks import get_task

GOOD = {"candidates": [{"rationale": "parallel rows, vector columns", "layer": [
    {"op": "split", "loop": "C.j", "factors": [None, 16]},
    {"op": "parallel", "loop": "C.i"}, {"op": "reorder", "loops": ["C.i", "C.j.0", "C.k", "C.j.1"]},
    {"op": "vectorize", "loop": "C.j.1"}, {"op": "decompose_reduction", "block": "C", "loop": "C.k"}]}]}
BAD = {"candidates": [{"rationale": "odd tile", "layer": [{"op": "split", "loop": "C.j", "factors": [None, 7]}]}]}


class ScriptedClient(LLMClient):
    provider = "scripted"

    def __init__(self, replies, **kw):
        super().__init__("m1", **kw)
        self.replies = list(replies)
        self.requests = []

    def _send(self, request):
        self.requests.append(request)
        return RawReply(text=self.replies.pop(0), model="m1", input_tokens=100, output_tokens=50)


@pytest.fixture(scope="module")
def matmul():
    return get_task("ex-matmul-256")


def _req(task, k=2):
    return ProposalRequest("schedule", CandidateIR.initial(task), task, "host-cpu", [], k)


def test_valid_reply_becomes_proposals_with_meta(matmul):
    client = ScriptedClient(["```json\n" + json.dumps(GOOD) + "\n```"])
    props = LLMProposer(client, client.spec, variant="v1").propose(_req(matmul))
    assert len(props) == 1
    p = props[0]
    assert [s.op for s in p.ir.schedule.steps][-1] == "decompose_reduction"
    assert p.rationale == "parallel rows, vector columns"
    assert p.meta["proposer"] == "scripted:m1" and p.meta["is_llm"] is True and p.meta["replayed"] is False
    assert p.meta["tokens"] == 150 and p.meta["prompt_variant"] == "schedule/cpu.v1" and p.meta["calls"] == 1
    assert len(p.meta["prompt_hash"]) >= 16 and p.meta["template_hash"] != p.meta["prompt_hash"]
    sent = json.dumps(client.requests[0])
    assert "C.i(256)" in sent and "vector_bits" in sent  # loop nests and hardware facts are in the prompt


def test_validation_error_goes_back_once(matmul):
    client = ScriptedClient([json.dumps(BAD), json.dumps(GOOD)])
    props = LLMProposer(client, client.spec, variant="v1").propose(_req(matmul))
    assert len(props) == 1 and props[0].meta["calls"] == 2
    feedback = json.dumps(client.requests[1]["messages"][-1])
    assert "loop C.j has extent 256; split factor 7 does not divide it" in feedback


def test_two_bad_replies_raise(matmul):
    client = ScriptedClient([json.dumps(BAD), "not json at all"])
    with pytest.raises(LLMReplyError):
        LLMProposer(client, client.spec, variant="v1").propose(_req(matmul))


def test_replayed_output_is_not_labelled_llm(matmul, tmp_path):
    path = tmp_path / "transcript.jsonl"
    client = ScriptedClient([json.dumps(GOOD)], recorder=Recorder(path))
    live = LLMProposer(client, client.spec, variant="v1").propose(_req(matmul))
    replay = get_proposer(f"replay:{path}", variants={"schedule": "v1"})
    again = replay.propose(_req(matmul))
    assert replay.is_llm is False
    assert [p.ir.hash() for p in again] == [p.ir.hash() for p in live]
    assert again[0].meta["replayed"] is True and again[0].meta["proposer"].startswith("replay:")


@pytest.mark.parametrize("layer", ["algorithm", "schedule", "memory"])
@pytest.mark.parametrize("family", ["cpu", "cuda", "opencl"])
def test_every_template_renders(layer, family):
    vars_ = {k: f"<{k}>" for k in ("task", "target_name", "facts", "ir_summary", "layer", "layer_json", "ops",
                                   "history", "k")}
    p = render(layer, family, vars_)
    assert p.variant == f"{layer}/{family}.v1" and "<ir_summary>" in p.user and "{{" not in p.system + p.user
    with pytest.raises(LekaError, match="uses {{history}} but it was not given"):
        render(layer, family, {k: v for k, v in vars_.items() if k != "history"})
