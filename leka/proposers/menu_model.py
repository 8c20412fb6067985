"""The model as a menu chooser: one prompt per layer with the menu, the measured history and the option of
a layer of its own; the reply is JSON constrained (on servers that take a schema) to valid menu ids.

Reply: {"picks": [{"id": "<menu id or own>", "why": "...", "knobs": {...}?, "layer": [...]?}]}. A pick may
change knobs to another variant its rule offers (the menu lists the values); "own" carries a whole layer,
checked like the free-form proposer's. A schema-valid but semantically invalid reply (unknown knobs, an
own layer that does not apply) goes back to the model once (LLMClient.complete_parsed).
"""
from __future__ import annotations

import json
from typing import Any

from leka.ir import MEMORY_OPS, SCHEDULE_OPS
from leka.targets import get_target

from .base import ProposalRequest
from .llm import extract_json, layer_candidate
from .menu import Menu, Pick, rule_doc
from .prompting import history_text, render

WHY_CHARS = 160
IR_LINES = 30  # loop-nest lines of the current IR shown (small models have small contexts)


def menu_schema(menu: Menu, k: int, layer: str) -> dict[str, Any]:
    """The reply schema: 1..k picks, each an enum of the menu's ids (in shown order) or "own"; knobs only
    those the menu's rules vary, each an enum of the values they take."""
    own_layer = {"type": "object"} if layer == "algorithm" else {"type": "array", "items": {"type": "object"}}
    values: dict[str, list[Any]] = {}
    for rule in dict.fromkeys(it.rule for it in menu.shown):
        for key, vals in menu.knob_values(rule).items():
            values.setdefault(key, []).extend(v for v in vals if v not in values[key])
    knobs = {"type": "object", "additionalProperties": False,
             "properties": {key: {"enum": vals} for key, vals in sorted(values.items()) if len(vals) > 1}}
    pick = {"type": "object",
            "properties": {"id": {"type": "string", "enum": [it.id for it in menu.shown] + ["own"]},
                           "why": {"type": "string", "maxLength": WHY_CHARS},
                           "knobs": knobs, "layer": own_layer},
            "required": ["id", "why"]}
    return {"name": "menu_picks",
            "schema": {"type": "object", "required": ["picks"],
                       "properties": {"picks": {"type": "array", "items": pick, "minItems": 1, "maxItems": max(1, k)}}}}


def menu_text(menu: Menu) -> str:
    """One line per option: id, rule, knobs, the values its knobs can take, the rule's reason."""
    lines = []
    for it in menu.shown:
        alternatives = {key: vals for key, vals in menu.knob_values(it.rule).items() if len(vals) > 1}
        alt = f"; knob values available: {json.dumps(alternatives, sort_keys=True)}" if alternatives else ""
        lines.append(f"- id {it.id}: rule {it.rule}, knobs {json.dumps(it.knobs, sort_keys=True)}{alt}\n"
                     f"  what it does: {rule_doc(it.rule)}")
    return "\n".join(lines)


def roofline_text(task: Any, facts: dict[str, Any]) -> str:
    """What bounds the kernel by the roofline model, from the task's flops/bytes and the target facts."""
    s = task.summary()
    flops, nbytes = float(s.get("flops") or 0), float(s.get("bytes") or 0)
    peak, bw = facts.get("peak_fp32_gflops"), facts.get("mem_bw_gbs")
    if not flops or not nbytes or not peak or not bw:
        return "(the target facts or the task lack flops/bytes: no roofline estimate)"
    intensity, ridge = flops / nbytes, float(peak) / float(bw)
    bound = "compute-bound: spend picks on vectorising, register tiling, unrolling" if intensity > ridge else \
        "memory-bound: spend picks on fewer passes over memory, contiguous access, parallel streams"
    floor_us = max(flops / (float(peak) * 1e3), nbytes / (float(bw) * 1e3))
    return (f"arithmetic intensity {intensity:.2f} flop/byte vs ridge point {ridge:.2f} ({bound}); "
            f"roofline floor {floor_us:.2f} us at peak {peak} GFLOP/s and {bw} GB/s")


def _ir_lines(req: ProposalRequest) -> str:
    lines = str(req.ir.summary()).splitlines()
    return "\n".join(lines[:IR_LINES] + ([f"... ({len(lines) - IR_LINES} more lines)"] if len(lines) > IR_LINES else []))


def parse_picks(text: str, req: ProposalRequest, menu: Menu, target: Any) -> list[Pick]:
    """Reply -> picks; ValueError worded for the model when no pick is usable."""
    data = extract_json(text)
    picks_in = data.get("picks") if isinstance(data, dict) else None
    if not isinstance(picks_in, list) or not picks_in:
        raise ValueError('the reply must be {"picks": [{"id": "<an id from the menu, or own>", "why": "..."}]}')
    out: list[Pick] = []
    problems: list[str] = []
    for n, raw in enumerate(picks_in[: max(1, req.k)]):
        try:
            pick = _one_pick(raw, req, menu, target)
        except ValueError as e:
            problems.append(f"pick {n}: {e}")
            continue
        if all(p.proposal.ir.hash() != pick.proposal.ir.hash() for p in out):
            out.append(pick)
    if not out:
        raise ValueError("no pick is usable: " + "; ".join(problems))
    return out


def _one_pick(raw: Any, req: ProposalRequest, menu: Menu, target: Any) -> Pick:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise ValueError('each pick is {"id": "...", "why": "..."}')
    why = str(raw.get("why", ""))[:WHY_CHARS]
    if raw["id"] == "own":
        from .base import Proposal

        ir = layer_candidate(req, target, raw.get("layer"))
        return Pick(Proposal(req.layer, ir, why, {"rule": "own", "knobs": {}}), why)
    item = menu.by_id(raw["id"])
    if item is None:
        raise ValueError(f"id {raw['id']!r} is not on the menu (ids: {', '.join(it.id for it in menu.shown)}, own)")
    knobs = raw.get("knobs")
    if not isinstance(knobs, dict) or not knobs or {**item.knobs, **knobs} == item.knobs:
        return Pick(item.proposal, why, item)
    variant = menu.variant(item.rule, item.knobs, knobs)
    if variant is None:
        raise ValueError(f"rule {item.rule} has no variant with knobs {json.dumps(knobs, sort_keys=True)}; "
                         f"its knob values: {json.dumps(menu.knob_values(item.rule), sort_keys=True)}")
    return Pick(variant, why, item, changed_knobs=True)


class ModelChooser:
    """Asks the model to pick from the menu (prompts/<layer>/<family>.<variant>.md, variant menu*)."""

    def __init__(self, client: Any, spec: str, variant: str = "menu", max_tokens: int = 400) -> None:
        self.client, self.name, self.variant, self.max_tokens = client, spec, variant, max_tokens
        self.is_llm = bool(getattr(client, "is_llm", True))

    def variables(self, req: ProposalRequest, preset: Any, menu: Menu) -> dict[str, Any]:
        ops = {"schedule": SCHEDULE_OPS, "memory": MEMORY_OPS}.get(req.layer, {})
        return {"task": json.dumps(req.task.summary(), sort_keys=True), "target_name": preset.name,
                "facts": json.dumps(preset.facts, sort_keys=True), "ir_summary": _ir_lines(req),
                "layer": req.layer, "ops": json.dumps(ops), "history": history_text(req.history),
                "k": str(req.k), "menu": menu_text(menu), "roofline": roofline_text(req.task, preset.facts)}

    def choose(self, req: ProposalRequest, menu: Menu, variant: str | None = None) -> tuple[list[Pick], dict[str, Any]]:
        preset = get_target(req.target)
        prompt = render(req.layer, preset.family, self.variables(req, preset, menu), variant or self.variant)
        picks, completions = self.client.complete_parsed(
            prompt.system, [{"role": "user", "content": prompt.user}],
            lambda text: parse_picks(text, req, menu, preset), max_tokens=self.max_tokens,
            schema=menu_schema(menu, req.k, req.layer))
        meta = {"prompt_variant": prompt.variant, "template_hash": prompt.hash,
                "prompt_hash": completions[-1].prompt_hash,
                "tokens": sum(c.input_tokens + c.output_tokens for c in completions),
                "cost_usd": sum(c.cost_usd or 0.0 for c in completions),
                "cached": all(c.cached for c in completions), "replayed": any(c.replayed for c in completions),
                "calls": len(completions), "is_llm": self.is_llm}
        return picks, meta
