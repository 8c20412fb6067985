"""LLMProposer: asks a leka.llm client for a layer in its strict JSON form and validates the reply with
the layer's own checks; one parse/validation error goes back to the model (complete_parsed)."""
from __future__ import annotations

import json
import re
from typing import Any

from leka.ir import LAYERS, SCHEDULE_OPS, MEMORY_OPS, CandidateIR, IRApplyError
from leka.targets import get_target

from .base import Proposal, ProposalRequest
from .prompting import DEFAULT_VARIANT, history_text, render

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
            ir = req.ir.with_layer(req.layer, c["layer"])
        except IRApplyError as e:
            problems.append(f"candidate {i}: {e}")
            continue
        errs = ir.validate(target)
        if errs:
            problems.append(f"candidate {i}: " + "; ".join(errs))
            continue
        out.append((ir, str(c.get("rationale", ""))))
    if not out:
        raise ValueError("no candidate is valid:\n" + "\n".join(problems))
    return out


class LLMProposer:
    def __init__(self, client: Any, spec: str, variant: str | dict[str, str] = DEFAULT_VARIANT,
                 max_tokens: int = 3000):
        self.client = client
        self.name = spec
        self.is_llm = bool(getattr(client, "is_llm", True))
        self.variant = variant  # one variant for every layer, or {layer: variant} (default v1)
        self.max_tokens = max_tokens

    def variables(self, req: ProposalRequest, preset: Any) -> dict[str, Any]:
        ops = {"schedule": SCHEDULE_OPS, "memory": MEMORY_OPS}.get(req.layer, {})
        return {"task": json.dumps(req.task.summary(), sort_keys=True), "target_name": preset.name,
                "facts": json.dumps(preset.facts, sort_keys=True), "ir_summary": req.ir.summary(),
                "layer": req.layer, "layer_json": json.dumps(req.ir.layer(req.layer).to_json()),
                "ops": json.dumps(ops), "history": history_text(req.history), "k": str(req.k)}

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        if req.layer not in LAYERS:
            raise IRApplyError(f"unknown layer {req.layer!r}; layers: {', '.join(LAYERS)}")
        preset = get_target(req.target)
        variant = self.variant if isinstance(self.variant, str) else self.variant.get(req.layer, DEFAULT_VARIANT)
        prompt = render(req.layer, preset.family, self.variables(req, preset), variant)
        parsed, completions = self.client.complete_parsed(
            prompt.system, [{"role": "user", "content": prompt.user}],
            lambda text: parse_reply(text, req, preset), max_tokens=self.max_tokens)
        meta = {"proposer": self.name, "prompt_variant": prompt.variant, "template_hash": prompt.hash,
                "prompt_hash": completions[-1].prompt_hash,
                "tokens": sum(c.input_tokens + c.output_tokens for c in completions),
                "cost_usd": sum(c.cost_usd or 0.0 for c in completions),
                "cached": all(c.cached for c in completions), "replayed": any(c.replayed for c in completions),
                "calls": len(completions), "is_llm": self.is_llm}
        return [Proposal(req.layer, ir.with_notes(rule=f"{self.name}", knobs={}), why, dict(meta))
                for ir, why in parsed]
