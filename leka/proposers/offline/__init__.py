"""The offline proposer "leka-offline-rules": deterministic, rule-driven, guided by target facts and
by measured feedback (failed rules are dropped, variants near the best measured knobs come first)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from leka.evaluator.script_guard import ScriptRejected
from leka.ir import CandidateIR
from leka.targets import get_target

from ..base import Proposal, ProposalRequest
from .algorithm import ALGORITHM_RULES
from .context import RuleContext
from .memory import MEMORY_RULES
from .rules import RULES

NAME = "leka-offline-rules"
_ORIGIN = re.compile(r"origin: (\S+) knobs=(\{.*\})")
_HASH = re.compile(r"ir hash: ([0-9a-f]+)")
# Measured naive time below which a parallel loop is not tried first: thread wake-up and joining cost
# several microseconds per call, and earlier runs lost to the naive lowering up to ~50 us kernels.
SMALL_KERNEL_MS = 0.08


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


def _naive_ms(history: list[dict[str, Any]]) -> float | None:
    """The naive lowering's time as the evaluator measured it next to the candidates (median)."""
    times = sorted(e["candidate_ms"] * e["speedup"] for e in history
                   if e.get("correct") and e.get("speedup") and e.get("candidate_ms"))
    return times[len(times) // 2] if times else None


_FEATURES = ("parallel", "vectorize", "compute_inline", "unroll", "rfactor", "cache_write")
_STEP_OP = re.compile(r"^\s+\d+: (\w+)\(", re.M)


def _features(summary: str) -> set[str]:
    """The telling primitives among a candidate's schedule/memory steps (read from its summary)."""
    return set(_STEP_OP.findall(summary)) & set(_FEATURES)


def _losing_features(history: list[dict[str, Any]]) -> set[str]:
    """Primitives present only in measured candidates that lost to the naive lowering (none won)."""
    measured = [(e, _features(e.get("summary") or "")) for e in history if e.get("correct") and e.get("speedup")]
    return {f for f in _FEATURES if any(f in fs for _, fs in measured)
            and all(e["speedup"] < 1.0 for e, fs in measured if f in fs)}


def _ops(ir: CandidateIR) -> set[str]:
    return {st.op for st in ir.schedule.steps + ir.memory.steps}


def _has_parallel(ir: CandidateIR) -> bool:
    return any(s.op == "parallel" for s in ir.schedule.steps)


def order_score(ir: CandidateIR, rules: list[Any]) -> float:
    """Rule preference order (x100) plus the variant's index within the rule (knob order)."""
    names = [r.NAME for r in rules]
    rule = ir.notes.get("rule")
    return 100.0 * (names.index(rule) if rule in names else len(names)) + ir.notes.get("variant", 0)


@dataclass
class _Feedback:
    """What the measured history says: origins and IR hashes already tried, rules that failed, the best."""
    tried: set[tuple[str, str]]
    tried_hashes: set[str]
    failed: set[str]
    best: dict[str, Any] | None
    best_rule: str | None
    best_knobs: dict[str, Any]

    @classmethod
    def of(cls, history: list[dict[str, Any]]) -> "_Feedback":
        tried = {(r, json.dumps(k, sort_keys=True)) for r, k in map(_origin, history) if r}
        tried_hashes = {m.group(1) for e in history for m in [_HASH.search(e.get("summary") or "")] if m}
        failed = {r for e in history for r, _ in [_origin(e)]
                  if r and (not e.get("compiled") or not e.get("correct"))}
        best = max((e for e in history if e.get("correct") and e.get("speedup")),
                   key=lambda e: e["speedup"], default=None)
        best_rule, best_knobs = _origin(best) if best else (None, {})
        return cls(tried, tried_hashes, failed, best, best_rule, best_knobs)

    def seen(self, rule: str, ir: CandidateIR) -> bool:
        """Already measured: the same rule with the same knobs, or the same IR."""
        return (rule, json.dumps(ir.notes.get("knobs", {}), sort_keys=True)) in self.tried \
            or ir.hash() in self.tried_hashes


_Scored = tuple[float, int, CandidateIR]


def _memory_candidates(family: str, ctx: RuleContext, fb: _Feedback, cands: list[_Scored]) -> None:
    """Decisions added on top of the current schedule; they come before whole alternative schedules."""
    for rule in MEMORY_RULES.get(family, []):
        if rule.NAME in fb.failed:
            continue
        for n, ir in enumerate(rule.apply(ctx) or []):
            if not fb.seen(rule.NAME, ir):
                cands.append((-1000.0 + n, len(cands), ir.with_notes(variant=n)))


def _schedule_candidates(layer: str, family: str, ctx: RuleContext, fb: _Feedback,
                         cands: list[_Scored]) -> None:
    """Whole schedules from the rules not yet failed, minus those already measured."""
    for order, rule in enumerate(RULES.get(family, [])):
        if rule.NAME in fb.failed:
            continue
        for n, ir in enumerate(rule.apply(ctx) or []):
            if layer == "memory" and not ir.memory.steps:
                continue
            if not ir.schedule.steps and not ir.memory.steps:
                continue  # nothing applied: the naive lowering again
            if fb.seen(rule.NAME, ir):
                continue
            # Rules in preference order, variants in their order; once a measurement exists,
            # variants of the best rule close to its knobs go first.
            ir = ir.with_notes(variant=n)
            score: float = order * 100 + n
            if fb.best_rule == rule.NAME:
                score = _distance(ir.notes.get("knobs", {}), fb.best_knobs)
            cands.append((score, len(cands), ir))


def _ranked(scored: list[_Scored], small: bool) -> list[CandidateIR]:
    # a kernel of a few microseconds: threads cost more than they share, serial first whatever the scores (a
    # penalty added to the score was outweighed by rule order once there were more than 10 rules)
    return [ir for _, _, ir in sorted(scored, key=lambda c: (small and _has_parallel(c[2]), c[0], c[1]))]


def _refine_then_contrast(ordered: list[CandidateIR], cands: list[_Scored], family: str, fb: _Feedback,
                          req: ProposalRequest, small: bool) -> list[CandidateIR]:
    """Nothing beat the naive lowering yet: up to k - 1 (at most 2) proposals refine the best (its
    nearest neighbours, above: a tile one step off often turns a loss into a win); the others go back
    to rule order, most unlike the best first, and leave last the primitives that appeared only in
    losing measurements."""
    rules = RULES.get(family, [])
    losing = _losing_features(req.history)
    contrast = _ranked([(order_score(ir, rules) - min(99.0, 5 * _distance(ir.notes.get("knobs", {}), fb.best_knobs))
                         + 1000 * len(losing & _ops(ir)), i, ir) for i, (_, _, ir) in enumerate(cands)], small)
    refine = ordered[:max(1, min(2, req.k - 1))]
    return refine + [ir for ir in contrast if all(ir is not r for r in refine)]


def _spread_first(ordered: list[CandidateIR], family: str, k: int) -> list[CandidateIR]:
    """No feedback yet: spread the first proposals over the rules (each rule's first variant), then
    the remaining variants in order; keep one serial variant among the first k (on small kernels
    thread start-up loses, and the cost is unknown until measured)."""
    incremental = {r.NAME for r in MEMORY_RULES.get(family, [])}
    firsts = [ir for ir in ordered if ir.notes["rule"] in incremental]  # all of them, in order
    rest: list[CandidateIR] = []
    rules_seen: set[str] = set()
    for ir in (ir for ir in ordered if ir.notes["rule"] not in incremental):
        (rest if ir.notes["rule"] in rules_seen else firsts).append(ir)
        rules_seen.add(ir.notes["rule"])
    ordered = firsts + rest
    if k >= 2 and all(_has_parallel(ir) for ir in ordered[:k - 1]):
        serial = next((ir for ir in ordered[k - 1:] if not _has_parallel(ir)), None)
        if serial is not None:
            ordered.remove(serial)
            ordered.insert(k - 1, serial)
    return ordered


def _proposals(ordered: list[CandidateIR], req: ProposalRequest, preset: Any) -> list[Proposal]:
    """The first k distinct candidates that validate on the target."""
    out: list[Proposal] = []
    seen: set[str] = set()
    for ir in ordered:
        if len(out) >= req.k:
            break
        if ir.hash() in seen or (ir.memory.steps and "memory" not in req.walked) or ir.validate(preset):
            continue
        seen.add(ir.hash())
        rule, knobs = ir.notes["rule"], ir.notes.get("knobs", {})
        out.append(Proposal(req.layer, ir, f"{rule} with {json.dumps(knobs)}",
                            {"proposer": NAME, "rule": rule, "knobs": knobs, "cached": False,
                             "replayed": False}))
    return out


def _first_schedule(preset: Any, ctx: RuleContext, req: ProposalRequest) -> list[Proposal]:
    """The first proposal of a request without history, found without applying every rule: with no feedback
    the first is the first rule (in preference order) whose first variant that changes the schedule validates
    (_spread_first), so the rules after it need not run. The quick pass asks for it for every kernel of a
    model: light_densenet121's 253 kernels spent 1.2-1.5 s each proposing when all rules ran."""
    for rule in RULES.get(preset.family, []):
        first = next(((n, ir) for n, ir in enumerate(rule.apply(ctx) or []) if ir.schedule.steps or ir.memory.steps),
                     None)
        if first is not None:
            found = _proposals([first[1].with_notes(variant=first[0])], req, preset)
            if found:
                return found
    return []  # no rule's first variant validates: the full ranking looks further


class OfflineProposer:
    name = NAME
    is_llm = False

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        preset = get_target(req.target)
        if req.layer == "algorithm" and not req.ir.algorithm.is_trusted:
            return []  # a model's rewrite is parsed only in a worker; the offline rules build on trusted text
        ctx = RuleContext.build(req.task, req.ir, preset, req.history)
        if req.layer == "algorithm":
            return self._propose_algorithm(req, ctx)
        if req.layer == "schedule" and req.k == 1 and not req.history:
            first = _first_schedule(preset, ctx, req)
            if first:
                return first
        fb = _Feedback.of(req.history)
        cands: list[_Scored] = []
        if req.layer == "memory":
            _memory_candidates(preset.family, ctx, fb, cands)
        _schedule_candidates(req.layer, preset.family, ctx, fb, cands)
        naive_ms = _naive_ms(req.history)
        small = naive_ms is not None and naive_ms < SMALL_KERNEL_MS
        ordered = _ranked(cands, small)
        if fb.best is not None and fb.best["speedup"] <= 1.0:
            ordered = _refine_then_contrast(ordered, cands, preset.family, fb, req, small)
        if not req.history:
            ordered = _spread_first(ordered, preset.family, req.k)
        return _proposals(ordered, req, preset)

    def _propose_algorithm(self, req: ProposalRequest, ctx: RuleContext) -> list[Proposal]:
        """Algorithm rewrites in rule order, skipping those already measured (by origin or IR hash)
        and, once one failed, that rule's other variants."""
        fb = _Feedback.of(req.history)
        out: list[Proposal] = []
        for rule in ALGORITHM_RULES:
            if rule.NAME in fb.failed:
                continue
            try:
                irs = rule.apply(ctx) or []
            except ScriptRejected:  # the rewrite outgrew the size bounds (algorithm.common): nothing from it
                continue
            for ir in irs:
                knobs = ir.notes.get("knobs", {})
                if len(out) >= req.k or fb.seen(rule.NAME, ir):
                    continue
                out.append(Proposal("algorithm", ir, f"{rule.NAME}: {ir.algorithm.note}",
                                    {"proposer": NAME, "rule": rule.NAME, "knobs": knobs, "cached": False,
                                     "replayed": False}))
        return out
