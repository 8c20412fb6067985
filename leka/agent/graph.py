r"""The LEKA state machine: every edge and every routing rule is declared here, and only here.

    START -> algorithm
    algorithm | schedule | memory --(decide)--> same layer   continue: still gaining
                                           \--> same layer   retry: no correct candidate, errors fed back
                                           \--> next layer   advance: < plateau_pct gain for plateau_steps steps
                                           \--> layer above  backtrack: this layer has nothing new to offer
                                           \--> finalize     stop: budget, step cap, or nothing left anywhere
    finalize -> END
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterator, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from . import nodes
from .context import AgentContext
from .state import LAYERS, AgentState, Decision, Policy, StepRecord

FINALIZE = "finalize"


def _first_open(layers: dict[str, Any], candidates: list[str], walked: tuple[str, ...] = LAYERS) -> str | None:
    return next((name for name in candidates if name in walked and not layers[name]["exhausted"]), None)


def start_layer(state: AgentState) -> str:
    """The first layer the policy walks (an ablation may skip the algorithm layer)."""
    return Policy.from_json(state["policy"]).layers[0]


def decide(state: AgentState) -> Decision:
    """Where to go after a layer step. Pure function of the state (so a resumed run routes the same)."""
    policy = Policy.from_json(state["policy"])
    steps = state.get("steps", [])
    if state.get("stop_reason"):
        return Decision(decision="stop", next=FINALIZE, reason=str(state["stop_reason"]))
    if not steps:
        return Decision(decision="start", next=policy.layers[0], reason="start")
    if len(steps) >= policy.max_steps:
        return Decision(decision="stop", next=FINALIZE, reason=f"step cap ({policy.max_steps}) reached")
    last = steps[-1]
    layer = last["layer"]
    layers = state["layers"]
    idx = LAYERS.index(layer)
    above = list(reversed(LAYERS[:idx]))  # nearest first
    below = list(LAYERS[idx + 1:])
    walked = policy.layers
    if layers[layer]["exhausted"]:
        why = "nothing new from the proposer" if last.get("outcome") == "exhausted" else \
            f"no correct candidate in {layers[layer]['fails']} steps"
        if (up := _first_open(layers, above, walked)) is not None:
            return Decision(decision="backtrack", next=up, reason=f"{layer} exhausted ({why})")
        if (down := _first_open(layers, below, walked)) is not None:
            return Decision(decision="advance", next=down, reason=f"{layer} exhausted ({why})")
        return Decision(decision="stop", next=FINALIZE, reason="every layer exhausted")
    if (no_room := _no_headroom(state, last, policy)) is not None:
        return Decision(decision="stop", next=FINALIZE, reason=no_room)
    if last.get("outcome") in ("failed", "bad_reply"):
        return Decision(decision="retry", next=layer, reason=f"{last['outcome']}: retry with errors fed back "
                                                             f"({layers[layer]['fails']}/{policy.max_retries})")
    if layers[layer]["stall"] >= policy.plateau_steps:
        why = f"gain < {policy.plateau_pct:g}% for {layers[layer]['stall']} steps"
        if (down := _first_open(layers, below, walked)) is not None:
            return Decision(decision="advance", next=down, reason=why)
        return Decision(decision="stop", next=FINALIZE, reason=f"converged ({why} at the last layer)")
    return Decision(decision="continue", next=layer, reason=str(last.get("outcome", "")))


def _no_headroom(state: AgentState, last: StepRecord, policy: Policy) -> str | None:
    """Why to stop a run whose baseline sits at the launch floor and that has beaten nothing, or None."""
    base = [ms for c in last.get("candidates", []) if c.get("correct") and (ms := c.get("baseline_ms"))]
    if policy.no_headroom_ms is None or not base or state["best"]["step"] is not None:
        return None
    if min(base) > policy.no_headroom_ms:
        return None
    return (f"no headroom: the baseline runs in {min(base) * 1e3:.1f} us (at or under "
            f"{policy.no_headroom_ms * 1e3:g} us) and no candidate beat it")


def _merged(state: AgentState, update: dict[str, Any]) -> AgentState:
    """The state as LangGraph will hold it after `update` (steps is an append reducer)."""
    after: dict[str, Any] = {**state, **update}
    after["steps"] = list(state.get("steps", [])) + list(update.get("steps", []))
    return cast(AgentState, after)


def _layer_node(ctx: AgentContext, layer: str) -> Callable[[AgentState], dict[str, Any]]:
    def run(state: AgentState) -> dict[str, Any]:
        update = nodes.layer_step(state, ctx, layer)
        decision = decide(_merged(state, update))
        step = dict(update["steps"][-1])
        step.update(decision=decision["decision"], next=decision["next"], reason=decision["reason"])
        update["steps"] = [step]
        update["decision"] = decision
        return update
    run.__name__ = f"{layer}_step"
    return run


def _route(state: AgentState) -> str:
    return state["decision"]["next"]


def build_graph(ctx: AgentContext) -> StateGraph:
    g = StateGraph(AgentState)
    for layer in LAYERS:
        # langgraph's overloads want a state type matching its TypedDictLike protocols (ClassVar keys),
        # which mypy never sees a TypedDict class satisfy
        g.add_node(layer, _layer_node(ctx, layer))  # type: ignore[call-overload]
    g.add_node(FINALIZE, lambda state: nodes.finalize(state, ctx))
    g.add_conditional_edges(START, start_layer, {name: name for name in LAYERS})
    targets: dict[Hashable, str] = {name: name for name in (*LAYERS, FINALIZE)}
    for layer in LAYERS:
        g.add_conditional_edges(layer, _route, targets)
    g.add_edge(FINALIZE, END)
    return g


def stream_run(ctx: AgentContext, initial: AgentState | None, checkpointer: Any,
               max_steps: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Run (initial given) or resume (initial None) the run `ctx.run_id`, yielding (node, update).

    The checkpointer's thread id is the run id, so a resume continues from the last completed node.
    """
    app = build_graph(ctx).compile(checkpointer=checkpointer)
    config: RunnableConfig = {"configurable": {"thread_id": ctx.run_id}, "recursion_limit": max_steps + 8}
    for chunk in app.stream(initial, config, stream_mode="updates"):
        for node, update in chunk.items():
            if node.startswith("__"):  # __interrupt__ and friends
                continue
            yield node, update or {}


def final_state(ctx: AgentContext, checkpointer: Any) -> AgentState:
    app = build_graph(ctx).compile(checkpointer=checkpointer)
    return cast(AgentState, app.get_state({"configurable": {"thread_id": ctx.run_id}}).values)
