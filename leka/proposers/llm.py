"""LLMProposer: asks a leka.llm client for a layer in its strict JSON form and validates the reply with
the layer's own checks; one parse/validation error goes back to the model (complete_parsed)."""
from __future__ import annotations

import json
import re
from typing import Any

from leka.llm.base import reply_tokens
from leka.ir import LAYERS, SCHEDULE_OPS, MEMORY_OPS, CandidateIR, IRApplyError
from leka.targets import get_target

from .base import Proposal, ProposalRequest
from .prompting import history_text, render

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON object of a reply (a ```json fence if present, else the outermost {...})."""
    m = _FENCE.search(text)
    body = m.group(1) if m else text[text.find("{"): text.rfind("}") + 1]
    try:
        return json.loads(body)
    except ValueError as e:
        raise ValueError(f"the reply is not valid JSON ({e}); answer with one JSON object only") from None


def parse_reply(text: str, req: ProposalRequest, target: Any) -> list[tuple[CandidateIR, str]]:
    """Reply -> [(ir, rationale)]; raises ValueError with every problem, worded for the model."""
    data = extract_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("candidates"), list) or not data["candidates"]:
        raise ValueError('the reply must be {"candidates": [{"rationale": "...", "layer": ...}, ...]}')
    out, problems = [], []
    for i, c in enumerate(data["candidates"][: max(1, req.k)]):
        if not isinstance(c, dict) or "layer" not in c:
            problems.append(f"candidate {i}: missing field 'layer'")
            continue
        try:
            out.append((layer_candidate(req, target, c["layer"]), str(c.get("rationale", ""))))
        except ValueError as e:
            problems.append(f"candidate {i}: {e}")
    if not out:
        raise ValueError("no candidate is valid:\n" + "\n".join(problems))
    return out


def layer_candidate(req: ProposalRequest, target: Any, layer: Any) -> CandidateIR:
    """The request's IR with a model-written `layer` (its JSON form), validated on the target; ValueError
    with the problems, worded for the model."""
    try:
        ir = req.ir.with_layer(req.layer, layer)
    except IRApplyError as e:
        raise ValueError(str(e)) from None
    errs = ir.validate(target)
    if errs:
        raise ValueError("; ".join(errs))
    if ir.memory.steps and "memory" not in req.walked and not req.ir.memory.steps:
        raise ValueError("this run walks no memory layer: no cache_read/cache_write/storage decisions")
    return ir


# The layered agent's default prompt with a model: pick from the offline rules' menu (leka.proposers.menu).
# The free-form variants (v1, v2: the model writes the whole layer as JSON) stay selectable per layer.
AGENT_VARIANT = "menu"
# Seconds one reply may take on a slow local model (max_tokens sized from its measured speed): two calls
# (a reply and its one feedback) fit the agent's default step limit of 30-120 s.
MENU_CALL_S, LAYER_CALL_S = 15.0, 30.0


class LLMProposer:
    def __init__(self, client: Any, spec: str, variant: str | dict[str, str] = AGENT_VARIANT,
                 max_tokens: int = 3000, menu_max_tokens: int = 400, seed: int = 0):
        self.client = client
        self.is_llm = bool(getattr(client, "is_llm", True))
        self.name = spec if self.is_llm else f"{spec} (replayed, not an LLM)"  # never labelled as the model's
        self.variant = variant  # one variant for every layer, or {layer: variant} (default: the menu)
        self.max_tokens = max_tokens  # a free-form layer
        self.menu_max_tokens = menu_max_tokens  # a menu pick: a few ids and short reasons
        self.seed = seed  # the attempt's: seeds the menu's shuffle

    def variables(self, req: ProposalRequest, preset: Any) -> dict[str, Any]:
        ops = {"schedule": SCHEDULE_OPS, "memory": MEMORY_OPS}.get(req.layer, {})
        return {"task": json.dumps(req.task.summary(), sort_keys=True), "target_name": preset.name,
                "facts": json.dumps(preset.facts, sort_keys=True), "ir_summary": req.ir.summary(),
                "layer": req.layer, "layer_json": json.dumps(req.ir.layer(req.layer).to_json()),
                "ops": json.dumps(ops), "history": history_text(req.history), "k": str(req.k)}

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        if req.layer not in LAYERS:
            raise IRApplyError(f"unknown layer {req.layer!r}; layers: {', '.join(LAYERS)}")
        variant = self.variant if isinstance(self.variant, str) else self.variant.get(req.layer, AGENT_VARIANT)
        if variant.startswith("menu"):
            from .menu import MenuProposer
            from .menu_model import ModelChooser

            chooser = ModelChooser(self.client, self.name, variant,
                                   reply_tokens(self.client, self.menu_max_tokens, MENU_CALL_S))
            return MenuProposer(chooser, seed=self.seed).propose(req)
        preset = get_target(req.target)
        prompt = render(req.layer, preset.family, self.variables(req, preset), variant)
        parsed, completions = self.client.complete_parsed(
            prompt.system, [{"role": "user", "content": prompt.user}],
            lambda text: parse_reply(text, req, preset),
            max_tokens=reply_tokens(self.client, self.max_tokens, LAYER_CALL_S))
        meta = {"proposer": self.name, "prompt_variant": prompt.variant, "template_hash": prompt.hash,
                "prompt_hash": completions[-1].prompt_hash,
                "tokens": sum(c.input_tokens + c.output_tokens for c in completions),
                "cost_usd": sum(c.cost_usd or 0.0 for c in completions),
                "cached": all(c.cached for c in completions), "replayed": any(c.replayed for c in completions),
                "calls": len(completions), "is_llm": self.is_llm}
        return [Proposal(req.layer, ir.with_notes(rule=f"{self.name}", knobs={}), why, dict(meta))
                for ir, why in parsed]
