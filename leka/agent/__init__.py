"""LEKA, the Layered Edge Kernel Agent: a LangGraph state machine over the algorithm, schedule and
memory layers of a candidate IR (see docs/agent.md).

    graph.py   every edge and routing rule        nodes.py   layer step and finalize
    state.py   typed, JSON-only checkpointed state  context.py the callables the nodes use
    run.py     checkpointing + trace + progress    trace.py   SQLite trace, contributions
    session.py real wiring (proposer, evaluator, budget, IR) for `leka tune` and `--method leka`
"""
from .context import AgentContext
from .graph import build_graph, decide
from .run import drive, new_run_id
from .state import LAYERS, AgentState, Policy
from .trace import TraceStore, contributions

__all__ = ["AgentContext", "AgentState", "LAYERS", "Policy", "TraceStore", "build_graph", "contributions", "decide",
           "drive", "new_run_id"]
