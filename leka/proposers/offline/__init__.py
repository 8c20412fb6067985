"""The offline proposer "leka-offline-rules": deterministic, rule-driven, guided by target facts and
by measured feedback (failed rules are dropped, variants near the best measured knobs come first)."""
from __future__ import annotations

import json
import re
from typing import Any

from leka.ir import CandidateIR
from leka.targets import get_target

from ..base import Proposal, ProposalRequest
from .context import RuleContext
from .rules import RULES

NAME = "leka-offline-rules"
_ORIGIN = re.compile(r"origin: (\S+) knobs=(\{.*\})")
_HASH = re.compile(r"ir hash: ([0-9a-f]+)")


def _origin(entry: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    m = _ORIGIN.search(entry.get("summary") or "")
    if not m:
        return None, {}
    try:
        return m.group(1), json.loads(m.group(2))
    except ValueError:
        return m.group(1), {}


def _distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    d = 0.0
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            d += abs((x or 1) / (y or 1) - 1) + abs((y or 1) / (x or 1) - 1)
        elif x != y:
            d += 1.0
    return d


class OfflineProposer:
    name = NAME
    is_llm = False

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        if req.layer == "algorithm":
            return []  # no built-in algorithm rewrites yet: this layer is the LLM proposer's
        preset = get_target(req.target)
        ctx = RuleContext.build(req.task, req.ir, preset, req.history)
        tried = {(r, json.dumps(k, sort_keys=True)) for r, k in map(_origin, req.history) if r}
        tried_hashes = {m.group(1) for e in req.history for m in [_HASH.search(e.get("summary") or "")] if m}
        failed = {r for e in req.history for r, _ in [_origin(e)]
                  if r and (not e.get("compiled") or not e.get("correct"))}
        best = max((e for e in req.history if e.get("correct") and e.get("speedup")),
                   key=lambda e: e["speedup"], default=None)
        best_rule, best_knobs = _origin(best) if best else (None, {})
        cands: list[tuple[float, int, CandidateIR]] = []
        for order, rule in enumerate(RULES.get(preset.family, [])):
            if rule.NAME in failed:
                continue
            irs = rule.apply(ctx) or []
            for n, ir in enumerate(irs):
                if req.layer == "memory" and not ir.memory.steps:
                    continue
                if not ir.schedule.steps and not ir.memory.steps:
                    continue  # nothing applied: the naive lowering again
                if (rule.NAME, json.dumps(ir.notes.get("knobs", {}), sort_keys=True)) in tried \
                        or ir.hash() in tried_hashes:
                    continue
                # Rules in preference order, variants in their order; once a measurement exists,
                # variants of the best rule close to its knobs go first.
                score = order * 100 + n
                if best_rule == rule.NAME:
                    score = _distance(ir.notes.get("knobs", {}), best_knobs)
                cands.append((score, len(cands), ir))
        cands.sort(key=lambda c: (c[0], c[1]))
        ordered = [ir for _, _, ir in cands]
        if not req.history:
            # no feedback yet: spread the first proposals over the rules (each rule's first variant),
            # then the remaining variants in order
            firsts, rest, rules_seen = [], [], set()
            for ir in ordered:
                (rest if ir.notes["rule"] in rules_seen else firsts).append(ir)
                rules_seen.add(ir.notes["rule"])
            ordered = firsts + rest
        out: list[Proposal] = []
        seen: set[str] = set()
        for ir in ordered:
            if len(out) >= req.k:
                break
            if ir.hash() in seen or ir.validate(preset):
                continue
            seen.add(ir.hash())
            rule, knobs = ir.notes["rule"], ir.notes.get("knobs", {})
            out.append(Proposal(req.layer, ir, f"{rule} with {json.dumps(knobs)}",
                                {"proposer": NAME, "rule": rule, "knobs": knobs, "cached": False,
                                 "replayed": False}))
        return out
