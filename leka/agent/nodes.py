"""Graph nodes: one optimisation step at a layer, and finalize.

A layer step runs propose -> validate -> compile -> verify -> profile -> feedback: the proposer for
the layer offers k IRs built on the best IR so far; each is validated (ir.validate), flattened
(ir.to_tvmscript) and handed to the evaluator (compile + verify + profile in an isolated worker);
the results become the step record, which later steps feed back to the proposer as history.

Deadlines (leka.agent.deadline): with a run clock, the step's IR work (proposer, validate, flatten) runs
in a forked child killed at the step's deadline, and each measurement is cut off at it too; what was cut
off is recorded (step field ``cut_off``, candidate failure "cut_off") and fed back, and the run goes on.

Nodes return state *updates* only; routing is decided in graph.py. Proposals and measurements are
written to the journal as soon as they exist, so a node re-run after a kill repeats neither.
"""
from __future__ import annotations

import json
import time
from typing import Any, cast

from leka.errors import one_line
from leka.ir.layers import adopt_trusted_text_hashes, trusted_text_hashes

from .context import AgentContext
from .deadline import Bounded, Emit, mirror_spending
from .evaluation import bounded_work, evaluate, forks
from .finalize import finalize  # noqa: F401 - the graph's finalize node (graph.py: nodes.finalize)
from .state import LAYERS, AgentState, Best, CandidateRecord, LayerStatus, Policy, StepRecord


def feedback_history(steps: list[StepRecord], limit: int) -> list[dict[str, Any]]:
    """The proposer's view of what was tried: one entry per evaluated or rejected proposal."""
    out: list[dict[str, Any]] = []
    for st in steps:
        if st.get("outcome") == "bad_reply":
            out.append({"layer": st["layer"], "summary": "(unusable proposer reply)", "compiled": False,
                        "correct": False, "failure": "bad_reply", "error": st.get("error"), "speedup": None,
                        "candidate_ms": None})
        if st.get("cut_off") and not st.get("candidates"):
            # the proposer overran; inside a known rule, the origin line marks that rule failed
            rule = st.get("cut_off_rule")
            out.append({"layer": st["layer"], "summary": f"(step cut off) origin: {rule} knobs={{}}" if rule else
                        "(step cut off while proposing)", "compiled": False, "correct": False,
                        "failure": "cut_off", "error": st["cut_off"], "speedup": None, "candidate_ms": None})
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
        return one_line(ir.summary(layer), 300)
    head = f"{notes['rule']}: " if notes.get("rule") else ""
    return one_line(head + "; ".join(added), 300)


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


def _fill_from_result(cand: CandidateRecord, res: dict[str, Any]) -> None:
    cand["compiled"] = bool(res.get("compiled"))
    cand["correct"] = bool(res.get("correct"))
    cand["failure"] = res.get("failure")
    cand["error"] = one_line(res["error"]) if res.get("error") else None
    cand["speedup"] = res.get("speedup")
    cand["candidate_ms"] = res.get("candidate_ms")
    cand["baseline_ms"] = res.get("baseline_ms")
    cand["source_hash"] = res.get("candidate_hash")
    if isinstance(res.get("remote"), dict):  # measured by the remote host: its job, for the records
        cand["remote"] = res["remote"]


def _prepare_one(ctx: AgentContext, base_ir: Any, prop: dict[str, Any], seen: set[str], layer: str) -> dict[str, Any]:
    """Read, describe, de-duplicate, validate and flatten one proposal (the step's IR work, in the child)."""
    out: dict[str, Any] = {}
    try:
        ir = ctx.ir_from_json(prop["ir"])
        out["ir_hash"] = ir_hash = ir.hash()
        out["diff"] = base_ir.diff(ir)
        out["summary"] = _short_summary(ir, out["diff"], layer)
        # The IR's own account (loop nests, origin rule and knobs): what proposers read back as history.
        out["ir_summary"] = str(ir.summary(layer))
    except Exception as e:
        return out | {"failure": "invalid", "error": one_line(f"unreadable IR: {type(e).__name__}: {e}")}
    if ir_hash == base_ir.hash() or ir_hash in seen:
        return out | {"failure": "duplicate", "error": "already evaluated"}
    seen.add(ir_hash)
    try:
        problems = ir.validate(ctx.target)
        if problems:
            return out | {"failure": "invalid", "error": one_line("; ".join(problems))}
        return out | {"valid": True, "source": ir.to_tvmscript(ctx.target)}
    except Exception as e:  # IRApplyError and friends: feedback for the next proposal
        return out | {"failure": "invalid", "error": one_line(str(e) or type(e).__name__)}


def _step_work(state: AgentState, ctx: AgentContext, layer: str, proposals: list[dict[str, Any]] | None,
               forked: bool):
    """The step's IR work as work(emit) for deadline.run_forked: proposals (unless journaled), then each
    one prepared for the evaluator. Messages: phase, spent (forked: each model call's charges as they
    happen), proposals, stopped, prepared."""
    policy = Policy.from_json(state["policy"])
    best = state["best"]

    def work(emit: Emit) -> None:
        base_ir = ctx.ir_from_json(state.get("base") or best["ir"])
        props = proposals
        if props is None:
            emit({"kind": "phase", "what": f"{layer} proposer"})
            if forked:
                mirror_spending(ctx.budget, emit)
            trusted0 = trusted_text_hashes()
            try:
                props = _propose(state, ctx, layer, policy, base_ir)
            except ctx.budget_errors as e:
                return emit({"kind": "stopped", "budget": True, "error": f"budget: {e}"})
            except Exception as e:  # garbage reply, proposer crash: a recorded failed step, then retry
                return emit({"kind": "stopped", "budget": False, "error": one_line(f"{type(e).__name__}: {e}")})
            emit({"kind": "proposals", "items": props, "trusted": sorted(trusted_text_hashes() - trusted0)})
        seen = set(state.get("seen", []))
        for i, prop in enumerate(props):
            emit({"kind": "phase", "what": f"preparing candidate {i} ({_rule_of(prop) or 'proposal'})", "index": i})
            emit({"kind": "prepared", "index": i, **_prepare_one(ctx, base_ir, prop, seen, layer)})
    return work


def _propose(state: AgentState, ctx: AgentContext, layer: str, policy: Policy, base_ir: Any) -> list[dict[str, Any]]:
    control = policy.control and _control_due(state, ctx, layer, base_ir, policy.k)
    history = feedback_history(state.get("steps", []), policy.history_len)
    # an ablation that leaves layers out says so (no memory decision in a schedule-only run); a full walk
    # keeps propose's plain (layer, ir, history, k) form
    walked = {} if tuple(policy.layers) == tuple(LAYERS) else {"walked": tuple(policy.layers)}
    out = [_proposal_to_json(p, layer)
           for p in ctx.propose(layer, base_ir, history, policy.k - (1 if control else 0), **walked)]
    origin = state.get("origin")
    if control and origin is not None:  # _control_due: never without an origin
        out += [_proposal_to_json(p, layer) | {"control": True}
                for p in ctx.propose(layer, ctx.ir_from_json(origin), history, 1, **walked)]
    return out


def _rule_of(prop: dict[str, Any]) -> str | None:
    return (prop.get("meta") or {}).get("rule") or (prop.get("ir", {}).get("notes") or {}).get("rule")


def _candidate(i: int, prop: dict[str, Any], ctx: AgentContext) -> CandidateRecord:
    meta = prop.get("meta", {})
    cand = CandidateRecord(index=i, rationale=one_line(prop.get("rationale", ""), 600),
                           proposer=str(meta.get("proposer", ctx.proposer_name)),
                           prompt_hash=meta.get("prompt_hash"), tokens=meta.get("tokens"),
                           cost_usd=meta.get("cost_usd"), cached=meta.get("cached"),
                           replayed=meta.get("replayed"), valid=False, compiled=False, correct=False,
                           failure=None, error=None, speedup=None, candidate_ms=None)
    if prop.get("control"):
        cand["control"] = True
    if isinstance(meta.get("menu"), dict):
        cand["menu"] = meta["menu"]
    return cand


def _cut_off_text(got: Bounded, bound: str) -> str:
    return f"step cut off after {got.elapsed_s:.0f} s ({bound}): {got.cut_off}"


def _gather(state: AgentState, ctx: AgentContext, layer: str, record: StepRecord, deadline: float | None,
            bound: str) -> tuple[str | None, list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """Run the step's IR work (bounded); journal the proposals; return (stop reason, proposals, prepared
    by index). A cut-off is written to the record; one at a proposal marks that candidate."""
    key = f"step{record['step']}:proposals"
    proposals = ctx.journal.journal_get(ctx.run_id, key)
    got = bounded_work(ctx, _step_work(state, ctx, layer, proposals, forks(ctx, deadline)), deadline)
    stop: str | None = None
    for m in got.messages:
        if m["kind"] == "spent" and got.forked and ctx.budget is not None:
            ctx.budget.settle(m["what"], m["amount"])  # charged in the child, whatever became of the step
        elif m["kind"] == "proposals":
            proposals = m["items"]
            ctx.journal.journal_put(ctx.run_id, key, proposals)
            if got.forked:  # trusted in the forked child: bring it home
                adopt_trusted_text_hashes(m.get("trusted", []))
        elif m["kind"] == "stopped" and m["budget"]:
            stop = m["error"]
        elif m["kind"] in ("stopped", "raised"):
            record["error"] = one_line(m["error"] if m["kind"] == "stopped" else f"{m['type']}: {m['message']}")
            record["outcome"] = "bad_reply"
    prepared = {m["index"]: m for m in got.of_kind("prepared")}
    if got.cut_off:
        record["cut_off"] = record["error"] = _cut_off_text(got, bound)
        phase: dict[str, Any] = next((m for m in reversed(got.of_kind("phase"))), {})
        if "index" in phase and proposals:
            prepared[phase["index"]] = {"failure": "cut_off", "error": record["cut_off"],
                                        "ir_summary": _origin_line(proposals[phase["index"]])}
        elif got.cut_off_rule:
            record["cut_off_rule"] = got.cut_off_rule
        if not bound.startswith("step"):
            stop = f"{bound} reached inside step {record['step']}"
    return stop, list(proposals or []), prepared


def _origin_line(prop: dict[str, Any]) -> str:
    """What the history shows for a proposal cut off before it had a summary (its rule is then skipped)."""
    knobs = (prop.get("meta") or {}).get("knobs") or {}
    return f"(cut off) origin: {_rule_of(prop) or 'unknown'} knobs={json.dumps(knobs, sort_keys=True)}"


# what a prepared proposal (_prepare_one) hands to its candidate record
_PREPARED_KEYS = ("ir_hash", "diff", "summary", "ir_summary", "failure", "error")


def _judge(state: AgentState, ctx: AgentContext, layer: str, record: StepRecord, proposals: list[dict[str, Any]],
           prepared: dict[int, dict[str, Any]], seen: list[str], best: Best, deadline: float | None,
           bound: str) -> tuple[str | None, Best, dict[str, Any] | None]:
    """Evaluate the prepared candidates in order; accept the fastest correct one (or keep an enabling
    rewrite as the base). Returns (stop reason, best, enabling IR)."""
    step_no, enabling, t0 = record["step"], None, time.monotonic()
    owed: list[dict[str, Any]] = []  # measurements a remote host owes: the step pauses once all are asked
    stops: tuple[type[BaseException], ...] = (_BudgetStop, *ctx.budget_errors)
    for i, prop in enumerate(proposals):
        prep = prepared.get(i)
        if prep is None:
            break  # not reached before a cut-off
        cand = _candidate(i, prop, ctx)
        record["candidates"].append(cand)
        cand.update(cast(CandidateRecord, {k: prep[k] for k in _PREPARED_KEYS if k in prep}))
        if prep.get("failure") in ("duplicate", "cut_off") or "ir_hash" not in prep:
            continue
        seen.append(prep["ir_hash"])
        if not prep.get("valid"):
            continue
        cand["valid"] = True
        if deadline is not None and time.monotonic() >= deadline:  # preparing used the step's time up
            record["cut_off"] = record["error"] = f"step cut off ({bound}) before measuring candidate {i}"
            cand["failure"], cand["error"] = "cut_off", record["cut_off"]
            return (None if bound.startswith("step") else f"{bound} reached inside step {step_no}"), best, enabling
        key = f"step{step_no}:eval{i}"
        try:
            if ctx.journal.journal_get(ctx.run_id, key) is None:
                _charge_evaluation(ctx)  # a journaled (already paid) measurement is not charged again
            res = evaluate(ctx, key, prep["source"], ctx.evaluate, deadline)
        except stops as e:
            cand["failure"], cand["error"] = "budget", one_line(str(e))
            return (str(e) if isinstance(e, _BudgetStop) else f"budget: {e}"), best, enabling
        if res.get("failure") == "pending":
            owed.append(res)
            continue
        _fill_from_result(cand, res)
        if res.get("failure") == "cut_off":
            what = f"measurement of candidate {i} ({_rule_of(prop) or 'proposal'})"
            record["cut_off"] = record["error"] = (f"step cut off after {time.monotonic() - t0:.0f} s of measuring "
                                                   f"({bound}): {what}")
            return (None if bound.startswith("step") else f"{bound} reached inside step {step_no}"), best, enabling
        speedup = cand.get("speedup")
        if cand["correct"] and speedup is not None and speedup > best["speedup"]:
            record["accepted"] = i
            best = Best(ir=prop["ir"], speedup=float(speedup), candidate_ms=cand.get("candidate_ms"),
                        step=step_no, layer=layer, summary=cand.get("summary", ""))
        elif (layer == LAYERS[0] and best["step"] is None and cand["correct"] and speedup
              and speedup >= ENABLING_MIN * best["speedup"] and record.get("base") is None
              and not state.get("base")):
            # an enabling rewrite (see ENABLING_MIN): the first one in the proposer's order, which ranks
            # structural rewrites (lanes, separation, tables, padding) before fusion; set once (a later
            # neutral rewrite on top of it, e.g. fusing the padding into the product, is not a base)
            record["base"] = i
            enabling = prop["ir"]
    if owed:
        from leka.remote.pending import raise_if_pending

        raise_if_pending(owed)  # the node does not complete: the run resumes from its last checkpoint
    return None, best, enabling


def _stop_before_step(ctx: AgentContext) -> str | None:
    try:
        if ctx.budget is not None:
            ctx.budget.check_time()
    except ctx.budget_errors as e:
        return f"budget: {e}"
    return ctx.clock.search_over() if ctx.clock is not None else None


def _classify(record: StepRecord, status: LayerStatus, stop_reason: str | None, policy: Policy) -> None:
    """Feedback: the step's outcome and this layer's counters (graph.decide reads them)."""
    evaluated = [c for c in record["candidates"] if c.get("valid") and c.get("failure") != "budget"]
    fresh = [c for c in record["candidates"] if c.get("failure") != "duplicate"]
    correct = any(c.get("correct") for c in record["candidates"])
    status["steps"] += 1
    if record.get("outcome") == "bad_reply":
        status["fails"] += 1
    elif stop_reason and not evaluated:
        record["outcome"] = "budget"
        status["steps"] -= 1  # nothing was tried: this step does not count against the layer
    elif record.get("cut_off") and not correct:
        record["outcome"] = "failed"  # retried with the cut-off fed back (an offline rule is then skipped)
        status["fails"] += 1
    elif not fresh:
        record["outcome"] = "exhausted"
        status["exhausted"] = True
    elif not correct:
        record["outcome"] = "failed"
        status["fails"] += 1
    else:
        status["fails"] = 0
        gain_pct = (record["best_after"] / (record["best_before"] or 1.0) - 1.0) * 100.0
        record["outcome"] = "improved" if gain_pct >= policy.plateau_pct else "no_gain"
        status["stall"] = 0 if record["outcome"] == "improved" else status["stall"] + 1
    if status["fails"] > policy.max_retries:
        status["exhausted"] = True


def _reopen(layers: dict[str, LayerStatus], names: tuple[str, ...]) -> None:
    """A new base IR: the layers `names` get a fresh chance on it."""
    for name in names:
        status = layers[name]
        status["exhausted"], status["stall"], status["fails"] = False, 0, 0


def layer_step(state: AgentState, ctx: AgentContext, layer: str) -> dict[str, Any]:
    """Run one propose/validate/evaluate/feedback step at `layer`; return the state update."""
    t0 = time.monotonic()
    policy = Policy.from_json(state["policy"])
    best = state["best"].copy()
    layers = {name: LayerStatus(**st) for name, st in state["layers"].items()}
    status = layers[layer]
    seen = list(state.get("seen", []))
    record = StepRecord(step=len(state.get("steps", [])) + 1, layer=layer, candidates=[], accepted=None, base=None,
                        best_before=best["speedup"], best_after=best["speedup"], error=None)
    enabling: dict[str, Any] | None = None
    stop_reason = _stop_before_step(ctx)
    deadline, bound = ctx.clock.step_deadline() if ctx.clock is not None else (None, "")
    if stop_reason is None:
        stop_reason, proposals, prepared = _gather(state, ctx, layer, record, deadline, bound)
        if stop_reason is None:
            judged, best, enabling = _judge(state, ctx, layer, record, proposals, prepared, seen, best, deadline, bound)
            stop_reason = stop_reason or judged
    record["best_after"] = best["speedup"]
    _classify(record, status, stop_reason, policy)
    if record["accepted"] is not None:
        status["accepted"] += 1
        # A new base IR: the layers below get a fresh chance on it.
        _reopen(layers, LAYERS[LAYERS.index(layer) + 1:])
    record["budget_spent"] = _budget_spent(ctx)
    record["elapsed_s"] = round(time.monotonic() - t0, 3)
    update: dict[str, Any] = {"steps": [record], "best": best, "layers": layers, "seen": seen, "layer": layer}
    if record["accepted"] is not None:
        update["base"] = None  # the layers below build on the new best
    elif enabling is not None:
        update["base"] = enabling
        _reopen(layers, LAYERS[1:])
    if stop_reason:
        update["stop_reason"] = stop_reason
    return update
