"""Graph nodes: one optimisation step at a layer, and finalize.

A layer step runs propose -> validate -> compile -> verify -> profile -> feedback: the proposer for
the layer offers k IRs built on the best IR so far; each is validated (ir.validate), flattened
(ir.to_tvmscript) and handed to the evaluator (compile + verify + profile in an isolated worker);
the results become the step record, which later steps feed back to the proposer as history.

Nodes return state *updates* only; routing is decided in graph.py. Proposals and measurements are
written to the journal as soon as they exist, so a node re-run after a kill repeats neither.
"""
from __future__ import annotations

import hashlib
import time
from typing import Any, Callable

from .context import AgentContext
from .state import LAYERS, AgentState, Best, CandidateRecord, LayerStatus, Policy, StepRecord


def _journaled(ctx: AgentContext, key: str, produce: Callable[[], Any]) -> Any:
    hit = ctx.journal.journal_get(ctx.run_id, key)
    if hit is not None:
        return hit
    value = produce()
    ctx.journal.journal_put(ctx.run_id, key, value)
    return value


def _one_line(text: str, limit: int = 400) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def feedback_history(steps: list[StepRecord], limit: int) -> list[dict[str, Any]]:
    """The proposer's view of what was tried: one entry per evaluated or rejected proposal."""
    out: list[dict[str, Any]] = []
    for st in steps:
        if st.get("outcome") == "bad_reply":
            out.append({"layer": st["layer"], "summary": "(unusable proposer reply)", "compiled": False,
                        "correct": False, "failure": "bad_reply", "error": st.get("error"), "speedup": None,
                        "candidate_ms": None})
        for c in st.get("candidates", []):
            if c.get("failure") == "duplicate":
                continue
            out.append({"layer": st["layer"], "summary": c.get("ir_summary") or c.get("summary", ""),
                        "compiled": c.get("compiled", False),
                        "correct": c.get("correct", False), "failure": c.get("failure"), "error": c.get("error"),
                        "speedup": c.get("speedup"), "candidate_ms": c.get("candidate_ms")})
    return out[-limit:] if limit > 0 else []


def _short_summary(ir: Any, diff: str, layer: str) -> str:
    """One line naming the decision: the proposer's rule (if it notes one) and the lines it added."""
    notes = getattr(ir, "notes", None) or {}
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if not added and not notes.get("rule"):
        return _one_line(ir.summary(layer), 300)
    head = f"{notes['rule']}: " if notes.get("rule") else ""
    return _one_line(head + "; ".join(added), 300)


def _proposal_to_json(p: Any, layer: str) -> dict[str, Any]:
    return {"layer": getattr(p, "layer", layer), "ir": p.ir.to_json(), "rationale": str(getattr(p, "rationale", "")),
            "meta": dict(getattr(p, "meta", {}) or {})}


def _budget_spent(ctx: AgentContext) -> dict[str, Any]:
    return dict(ctx.budget.spent()) if ctx.budget is not None else {}


def _charge_evaluation(ctx: AgentContext) -> None:
    """One candidate costs one compile and one measurement; raise before spending past a limit."""
    if ctx.budget is None:
        return
    for kind in ("compiles", "measurements"):
        if not ctx.budget.can_afford(kind):
            raise _BudgetStop(f"budget: no {kind} left")
    ctx.budget.charge("compiles")
    ctx.budget.charge("measurements")


class _BudgetStop(Exception):
    pass


# A correct algorithm rewrite that is not faster than the initial IR by itself, but within this factor of
# it, becomes the base the schedule and memory layers build on (zero-padding to the vector width or
# splitting scans into lanes costs a little unscheduled and is what makes the schedules possible). Only
# while nothing has been accepted yet: the best measured IR stays the answer either way.
ENABLING_MIN = 0.8


def _control_due(state: AgentState, ctx: AgentContext, layer: str, base_ir: Any, k: int) -> bool:
    """The first schedule step on a rewritten algorithm also schedules the task's own (one of k): a
    rewrite's speed unscheduled says little about its schedules (split-K wins 1.1x alone and then
    rules out the tiled product that wins 4x), so the layer below measures both before building on one."""
    origin = state.get("origin")
    return (layer == LAYERS[1] and k >= 2 and origin is not None
            and base_ir.summary(LAYERS[0]) != ctx.ir_from_json(origin).summary(LAYERS[0])
            and not any(c.get("control") for s in state.get("steps", []) for c in s.get("candidates", [])))


def _evaluate(ctx: AgentContext, key: str, source: str, fn: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    def produce() -> dict[str, Any]:
        try:
            return dict(fn(source))
        except ctx.budget_errors:
            raise
        except Exception as e:  # the evaluator itself broke (not the candidate): record it, run goes on
            return {"compiled": False, "correct": False, "failure": "evaluator_error",
                    "error": _one_line(f"{type(e).__name__}: {e}")}
    return _journaled(ctx, key, produce)


def _fill_from_result(cand: CandidateRecord, res: dict[str, Any]) -> None:
    cand["compiled"] = bool(res.get("compiled"))
    cand["correct"] = bool(res.get("correct"))
    cand["failure"] = res.get("failure")
    cand["error"] = _one_line(res["error"]) if res.get("error") else None
    cand["speedup"] = res.get("speedup")
    cand["candidate_ms"] = res.get("candidate_ms")
    cand["baseline_ms"] = res.get("baseline_ms")
    cand["source_hash"] = res.get("candidate_hash")


def layer_step(state: AgentState, ctx: AgentContext, layer: str) -> dict[str, Any]:
    """Run one propose/validate/evaluate/feedback step at `layer`; return the state update."""
    t0 = time.monotonic()
    policy = Policy.from_json(state["policy"])
    steps = state.get("steps", [])
    step_no = len(steps) + 1
    best: Best = dict(state["best"])  # type: ignore[assignment]
    layers = {name: LayerStatus(**st) for name, st in state["layers"].items()}
    status = layers[layer]
    seen = list(state.get("seen", []))
    base_ir = ctx.ir_from_json(state.get("base") or best["ir"])
    control = policy.control and _control_due(state, ctx, layer, base_ir, policy.k)
    record = StepRecord(step=step_no, layer=layer, candidates=[], accepted=None, base=None,
                        best_before=best["speedup"], best_after=best["speedup"], error=None)
    enabling: dict[str, Any] | None = None
    stop_reason: str | None = None
    proposals: list[dict[str, Any]] = []
    try:
        if ctx.budget is not None:
            ctx.budget.check_time()
        history = feedback_history(steps, policy.history_len)

        def produce() -> list[dict[str, Any]]:
            out = [_proposal_to_json(p, layer) for p in ctx.propose(layer, base_ir, history, policy.k - (1 if control else 0))]
            if control:
                out += [_proposal_to_json(p, layer) | {"control": True}
                        for p in ctx.propose(layer, ctx.ir_from_json(state["origin"]), history, 1)]
            return out
        proposals = _journaled(ctx, f"step{step_no}:proposals", produce)
    except ctx.budget_errors as e:
        stop_reason = f"budget: {e}"
    except Exception as e:  # garbage reply, proposer crash: a recorded failed step, then retry
        record["error"] = _one_line(f"{type(e).__name__}: {e}")
        record["outcome"] = "bad_reply"

    base_hash = base_ir.hash()
    for i, prop in enumerate(proposals):
        if stop_reason:
            break
        meta = prop.get("meta", {})
        cand = CandidateRecord(index=i, rationale=_one_line(prop.get("rationale", ""), 600),
                               proposer=str(meta.get("proposer", ctx.proposer_name)),
                               prompt_hash=meta.get("prompt_hash"), tokens=meta.get("tokens"),
                               cost_usd=meta.get("cost_usd"), cached=meta.get("cached"),
                               replayed=meta.get("replayed"), valid=False, compiled=False, correct=False,
                               failure=None, error=None, speedup=None, candidate_ms=None)
        if prop.get("control"):
            cand["control"] = True
        record["candidates"].append(cand)
        try:
            ir = ctx.ir_from_json(prop["ir"])
            cand["ir_hash"] = ir_hash = ir.hash()
            cand["diff"] = base_ir.diff(ir)
            cand["summary"] = _short_summary(ir, cand["diff"], layer)
            # The IR's own account (loop nests, origin rule and knobs): what proposers read back as history.
            cand["ir_summary"] = str(ir.summary(layer))
        except Exception as e:
            cand.update(failure="invalid", error=_one_line(f"unreadable IR: {type(e).__name__}: {e}"))
            continue
        if ir_hash == base_hash or ir_hash in seen:
            cand.update(failure="duplicate", error="already evaluated")
            continue
        seen.append(ir_hash)
        try:
            problems = ir.validate(ctx.target)
            if problems:
                cand.update(failure="invalid", error=_one_line("; ".join(problems)))
                continue
            source = ir.to_tvmscript(ctx.target)
        except Exception as e:  # IRApplyError and friends: feedback for the next proposal
            cand.update(failure="invalid", error=_one_line(str(e) or type(e).__name__))
            continue
        cand["valid"] = True
        try:
            if ctx.journal.journal_get(ctx.run_id, f"step{step_no}:eval{i}") is None:
                _charge_evaluation(ctx)  # a journaled (already paid) measurement is not charged again
            res = _evaluate(ctx, f"step{step_no}:eval{i}", source, ctx.evaluate)
        except (_BudgetStop, *ctx.budget_errors) as e:
            cand.update(valid=True, failure="budget", error=_one_line(str(e)))
            stop_reason = str(e) if isinstance(e, _BudgetStop) else f"budget: {e}"
            break
        _fill_from_result(cand, res)
        if cand["correct"] and cand.get("speedup") is not None and cand["speedup"] > best["speedup"]:
            record["accepted"] = i
            best = Best(ir=prop["ir"], speedup=float(cand["speedup"]), candidate_ms=cand.get("candidate_ms"),
                        step=step_no, layer=layer, summary=cand.get("summary", ""))
        elif (layer == LAYERS[0] and best["step"] is None and cand["correct"] and cand.get("speedup")
              and cand["speedup"] >= ENABLING_MIN * best["speedup"] and record.get("base") is None
              and not state.get("base")):
            # an enabling rewrite (see ENABLING_MIN): the first one in the proposer's order, which ranks
            # structural rewrites (lanes, separation, tables, padding) before fusion; set once (a later
            # neutral rewrite on top of it, e.g. fusing the padding into the product, is not a base)
            record["base"] = i
            enabling = prop["ir"]

    # Feedback: classify the step and update this layer's counters (graph.decide reads them).
    evaluated = [c for c in record["candidates"] if c.get("valid") and c.get("failure") != "budget"]
    fresh = [c for c in record["candidates"] if c.get("failure") != "duplicate"]
    status["steps"] += 1
    if record.get("outcome") == "bad_reply":
        status["fails"] += 1
    elif stop_reason and not evaluated:
        record["outcome"] = "budget"
        status["steps"] -= 1  # nothing was tried: this step does not count against the layer
    elif not fresh:
        record["outcome"] = "exhausted"
        status["exhausted"] = True
    elif not any(c.get("correct") for c in record["candidates"]):
        record["outcome"] = "failed"
        status["fails"] += 1
    else:
        status["fails"] = 0
        gain_pct = (best["speedup"] / (record["best_before"] or 1.0) - 1.0) * 100.0
        record["outcome"] = "improved" if gain_pct >= policy.plateau_pct else "no_gain"
        status["stall"] = 0 if record["outcome"] == "improved" else status["stall"] + 1
    if status["fails"] > policy.max_retries:
        status["exhausted"] = True
    if record["accepted"] is not None:
        status["accepted"] += 1
        # A new base IR: the layers below get a fresh chance on it.
        for lower in LAYERS[LAYERS.index(layer) + 1:]:
            layers[lower].update(exhausted=False, stall=0, fails=0)
    record["best_after"] = best["speedup"]
    record["budget_spent"] = _budget_spent(ctx)
    record["elapsed_s"] = round(time.monotonic() - t0, 3)
    update: dict[str, Any] = {"steps": [record], "best": best, "layers": layers, "seen": seen, "layer": layer}
    if record["accepted"] is not None:
        update["base"] = None  # the layers below build on the new best
    elif enabling is not None:
        update["base"] = enabling
        for lower in LAYERS[1:]:
            layers[lower].update(exhausted=False, stall=0, fails=0)
    if stop_reason:
        update["stop_reason"] = stop_reason
    return update


def _source_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# Fresh worker and search disagreeing by more than this factor (either way) triggers two more fresh
# measurements and the median run is reported: the same rule as experiments/offline_proposer_l1.py. At 2x,
# 1.8x swings of 40-70 us kernels on this shared 2-core machine went unchecked.
REMEASURE_DISAGREEMENT = 1.25


def _disagrees(fresh: float | None, search: float, factor: float = REMEASURE_DISAGREEMENT) -> bool:
    return fresh is not None and search > 0 and fresh > 0 and max(fresh / search, search / fresh) > factor


def finalize(state: AgentState, ctx: AgentContext) -> dict[str, Any]:
    """Re-measure the best verified IR against the baseline in a fresh worker and record the result."""
    from .trace import contributions  # pure helper; local import keeps nodes free of storage code

    best = state["best"]
    fn = ctx.remeasure or ctx.evaluate
    remeasures: list[float | None] = []
    try:
        source = ctx.ir_from_json(best["ir"]).to_tvmscript(ctx.target)
        res = _evaluate(ctx, "final:eval", source, fn)
        remeasures.append(res.get("speedup"))
        if _disagrees(res.get("speedup"), best["speedup"]):
            # Search and fresh worker disagree (timing noise on a shared machine): measure twice more in
            # fresh workers and report the median run, all three recorded.
            runs = [res] + [_evaluate(ctx, f"final:eval{i}", source, fn) for i in (2, 3)]
            remeasures = [r.get("speedup") for r in runs]
            if all(r.get("correct") and r.get("speedup") for r in runs):
                res = sorted(runs, key=lambda r: r["speedup"])[1]
    except Exception as e:
        source, res = "", {"compiled": False, "correct": False, "failure": "invalid",
                           "error": _one_line(f"{type(e).__name__}: {e}")}
    steps = state.get("steps", [])
    final = {
        "run_id": ctx.run_id, "task": state["task"], "target": state["target"], "proposer": state["proposer"],
        "correct": bool(res.get("correct")), "compiled": bool(res.get("compiled")),
        "failure": res.get("failure"), "error": res.get("error"),
        "speedup": res.get("speedup"), "baseline": res.get("baseline", "tvm-naive"),
        "candidate_ms": res.get("candidate_ms"), "baseline_ms": res.get("baseline_ms"),
        "spread": res.get("spread"), "baseline_spread": res.get("baseline_spread"),
        "search_speedup": best["speedup"], "best_step": best["step"], "best_layer": best["layer"],
        "best_summary": best["summary"], "source_hash": res.get("candidate_hash") or (
            _source_digest(source) if source else None),
        "steps": len(steps), "evaluations": sum(1 for s in steps for c in s.get("candidates", [])
                                                 if c.get("valid") and c.get("failure") != "budget"),
        "stop_reason": state.get("stop_reason") or state.get("decision", {}).get("reason"),
        "budget_spent": _budget_spent(ctx), "contributions": contributions(steps),
        "remeasured_speedups": remeasures, "best_ir": best["ir"], "eval": res,
    }
    return {"final": final}
