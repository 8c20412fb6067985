"""Menu prompting (leka.proposers.menu): the menu, its shuffle, the model's pick under a schema, knob
changes, the random and rules controls, and the schedule-only arm without memory decisions."""
from __future__ import annotations

import json

import pytest

from leka.ir import CandidateIR
from leka.llm import LLMReplyError
from leka.proposers import ProposalRequest, get_proposer
from leka.proposers.llm import LLMProposer
from leka.proposers.menu import build_menu
from leka.tasks import get_task

from test_proposers_llm import ScriptedClient


@pytest.fixture(scope="module")
def matmul():
    return get_task("ex-matmul-256")


def _req(task, k=2, walked=("algorithm", "schedule", "memory"), layer="schedule"):
    return ProposalRequest(layer, CandidateIR.initial(task), task, "host-cpu", [], k, walked)


def _pick(*ids, knobs=None):
    return json.dumps({"picks": [{"id": i, "why": "test", **({"knobs": knobs} if knobs else {})} for i in ids]})


def test_menu_is_shuffled_by_seed_with_position_free_ids(matmul):
    a, b, c = (build_menu(_req(matmul), seed) for seed in (0, 0, 1))
    assert len(a.shown) >= 3 and len({it.id for it in a.shown}) == len(a.shown)
    assert [it.id for it in a.shown] == [it.id for it in b.shown]  # reproducible
    assert {it.id for it in a.shown} == {it.id for it in c.shown}  # same options ...
    assert [it.id for it in a.shown] != [it.id for it in c.shown]  # ... in another order
    assert sorted(it.rank for it in a.shown) == list(range(len(a.shown)))


def test_model_pick_under_a_schema_records_position(matmul):
    menu = build_menu(_req(matmul), 0)
    last = menu.shown[-1]
    client = ScriptedClient([_pick(last.id)])
    props = LLMProposer(client, client.spec).propose(_req(matmul))
    assert len(props) == 1 and props[0].ir.hash() == last.proposal.ir.hash()
    m = props[0].meta
    assert m["proposer"] == "scripted:m1" and m["is_llm"] is True and m["prompt_variant"] == "schedule/cpu.menu"
    assert m["menu"]["position"] == len(menu.shown) - 1 and m["menu"]["rank"] == last.rank and m["calls"] == 1
    schema = client.requests[0]["schema"]["schema"]
    assert schema["properties"]["picks"]["items"]["properties"]["id"]["enum"] == [it.id for it in menu.shown] + ["own"]
    assert last.id in client.requests[0]["messages"][0]["content"]


def test_unknown_id_and_missing_knob_variant_go_back_once(matmul):
    menu = build_menu(_req(matmul), 0)
    item = next(it for it in menu.shown if len(menu.knob_values(it.rule)) > 1)
    key, values = next((k, v) for k, v in menu.knob_values(item.rule).items() if len(v) > 1)
    other = next(v for v in values if v != item.knobs.get(key))
    client = ScriptedClient([_pick("nope"), _pick(item.id, knobs={key: other})])
    props = LLMProposer(client, client.spec).propose(_req(matmul))
    assert "'nope' is not on the menu" in client.requests[1]["messages"][-1]["content"]
    assert props[0].meta["menu"]["changed_knobs"] is True and props[0].meta["knobs"][key] == other
    assert props[0].ir.hash() != item.proposal.ir.hash() and props[0].meta["calls"] == 2
    bad = ScriptedClient([_pick(item.id, knobs={key: "no-such-value"}), "garbage"])
    with pytest.raises(LLMReplyError):
        LLMProposer(bad, bad.spec).propose(_req(matmul))


@pytest.mark.slow  # 21 s on the 2-core host: `make test-slow` (the default run stays near 20 minutes)
def test_random_and_rules_controls_use_the_same_menu(matmul):
    menu = build_menu(_req(matmul, k=1), 0)
    rules = get_proposer(None, pick="rules").propose(_req(matmul, k=1))
    assert rules[0].meta["proposer"] == "menu-rules-pick" and rules[0].meta["menu"]["rank"] == 0
    picks = [get_proposer(None, pick="random", seed=s).propose(_req(matmul, k=1))[0] for s in range(6)]
    assert all(p.meta["proposer"] == "menu-random-pick" for p in picks)
    assert len({p.meta["menu"]["rank"] for p in picks}) > 1  # not always the rules' first choice
    assert {p.ir.hash() for p in picks} <= {it.proposal.ir.hash() for it in build_menu(_req(matmul, k=1), 0).shown} | \
        {it.proposal.ir.hash() for s in range(6) for it in build_menu(_req(matmul, k=1), s).shown}
    assert menu.shown


def test_schedule_only_arm_gets_no_memory_decisions(matmul):
    full = build_menu(_req(matmul, k=4), 0)
    assert any(p.ir.memory.steps for p in full.pool), "the test needs a rule that adds cache_write"
    only = build_menu(_req(matmul, k=4, walked=("schedule",)), 0)
    assert only.pool and not any(p.ir.memory.steps for p in only.pool)
