"""`codeloop`: a Claude-Code-style agent on ONE flat program, no layers. The model drives a loop of native
tool calls (OpenAI function calling / Anthropic tool use) over the workspace tools of workspace.py —
read_task, read_file, write_file, edit_file, compile, run_tests, profile — until the budget ends, the
model stops calling tools, or `max_turns` model turns have passed. The answer is the best profiled
correct program.

With no model it runs the offline proposer as a flat loop with feedback and no layers: each turn asks
for ONE whole schedule of the best program so far (the schedule rules, then memory decisions once those
run dry), writes it to kernel.py and profiles it; every result is fed back as history. No algorithm
rewrites, no layer walk, no control proposal: what is left of LEKA is greedy search with feedback.
"""
from __future__ import annotations

import json
from typing import Any

from leka.budget import BudgetExceeded
from leka.errors import LekaError
from leka.llm.base import reply_tokens
from leka.methods import MethodContext, Sample, register_method
from leka.methods.options import attempt_budget

from .common import as_sample, attempt_journal, evaluate_fn, make_llm, no_candidate_sample, proposer_name, setup
from .workspace import PROGRAM, TOOLS, Workspace

DEFAULT_MAX_TURNS = 40


TOOL_CHOICES = ("auto", "force")
TURN_CALL_S = 30.0  # seconds one turn may take on a slow local model (max_tokens sized from its speed)
ACT = "act"  # the one forced tool of tool_choice=force: {"call": {"tool": NAME, "arguments": {...}}}


def forced_tools() -> list[dict[str, Any]]:
    """The workspace tools (and `finish`) as one tool whose argument picks the tool and its arguments, each
    per its own schema (anyOf): for servers that call a tool only when the call is forced."""
    choices = [{"type": "object", "required": ["tool", "arguments"],
                "properties": {"tool": {"const": t["name"]}, "arguments": t["parameters"]}}
               for t in [*TOOLS, {"name": "finish", "parameters": {"type": "object", "properties": {}}}]]
    return [{"name": ACT, "description": "Run one workspace tool, or finish (the best profiled kernel is the answer).",
             "parameters": {"type": "object", "required": ["call"], "properties": {"call": {"anyOf": choices}}}}]


def _unwrap(call: dict[str, Any]) -> dict[str, Any]:
    """A forced `act` call as the workspace call it names (unknown shapes go to the workspace as they are,
    which answers with a tool error)."""
    inner = call["arguments"].get("call") if isinstance(call.get("arguments"), dict) else None
    if call.get("name") != ACT or not isinstance(inner, dict):
        return call
    return {"id": call["id"], "name": str(inner.get("tool")), "arguments": inner.get("arguments") or {}}


def tool_choice(client: Any, options: dict[str, Any]) -> str:
    """"force" for servers that ignore tool_choice=auto (llama.cpp's: they never call a tool unforced)."""
    return str(options.get("tool_choice") or ("force" if getattr(client, "forces_tools", False) else "auto"))


def model_loop(client: Any, ws: Workspace, options: dict[str, Any], sample_idx: int, max_turns: int) -> str:
    """Drive the tool loop; returns why it stopped."""
    from leka.proposers.prompting import render

    variables = {"task": json.dumps(ws.task.summary(), sort_keys=True), "target_name": ws.target.name,
                 "facts": json.dumps(ws.target.facts, sort_keys=True)}
    prompt = render("codeloop", ws.target.family, variables, str(options.get("prompt", "v1")))
    forced = tool_choice(client, options) == "force"
    tools, choice = (forced_tools(), ACT) if forced else (TOOLS, None)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.user}]
    max_tokens = int(options.get("max_tokens") or reply_tokens(client, 4000, TURN_CALL_S))
    for _ in range(max_turns):
        reply = client.complete(prompt.system, messages, tools=tools, tool_choice=choice, sample=sample_idx,
                                max_tokens=max_tokens)
        messages.append({"role": "assistant", "content": reply.text, "tool_calls": list(reply.tool_calls)})
        if not reply.tool_calls:
            return "the model stopped calling tools"
        for call in map(_unwrap, reply.tool_calls):
            if call["name"] == "finish":
                return "the model called finish"
            result = ws.call(call["name"], call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return f"turn cap ({max_turns}) reached"


def _history_entry(layer: str, ir: Any, res: dict[str, Any]) -> dict[str, Any]:
    return {"layer": layer, "summary": ir.summary(layer), "compiled": res.get("compiled", False),
            "correct": res.get("correct", False), "failure": res.get("failure"), "error": res.get("error"),
            "speedup": res.get("speedup"), "candidate_ms": res.get("candidate_ms")}


def offline_loop(ws: Workspace, max_turns: int) -> str:
    """The offline proposer as a flat greedy loop with feedback (see the module docstring)."""
    from leka.ir import CandidateIR
    from leka.proposers import OfflineProposer, ProposalRequest

    proposer, best = OfflineProposer(), CandidateIR.initial(ws.task)
    best_speedup, history, seen = 1.0, [], {best.hash()}
    layers = ["schedule", "memory"]
    for _ in range(max_turns):
        if not layers:
            return "the offline proposer has nothing new"
        props = [p for p in proposer.propose(ProposalRequest(layer=layers[0], ir=best, task=ws.task,
                                                             target=ws.target, history=history, k=1))
                 if p.ir.hash() not in seen]
        if not props:
            layers.pop(0)
            continue
        ir = props[0].ir
        seen.add(ir.hash())
        try:
            source = ir.to_tvmscript(ws.target)
        except Exception as e:  # an IRApplyError is feedback like a compile error
            history.append(_history_entry(layers[0], ir, {"failure": "invalid", "error": str(e)}))
            continue
        ws.call("write_file", {"path": PROGRAM, "content": source})
        ws.call("profile", {"path": PROGRAM})
        res = ws.results[-1]
        history.append(_history_entry(layers[0], ir, res))
        if res.get("correct") and (res.get("speedup") or 0) > best_speedup:
            best, best_speedup = ir, float(res["speedup"])
    return f"turn cap ({max_turns}) reached"


class CodeLoopMethod:
    name = "codeloop"

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = setup(self.name, options, ("max_turns", "tool_choice"))
        self.max_turns = int(self.options.get("max_turns", DEFAULT_MAX_TURNS))
        if self.options.get("tool_choice") not in (None, *TOOL_CHOICES):
            raise LekaError(f"method codeloop: tool_choice={self.options['tool_choice']!r}: expected one of "
                            f"{', '.join(TOOL_CHOICES)}")

    @property
    def is_llm(self) -> bool:
        return bool(self.options.get("llm"))

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        budget = attempt_budget(ctx, self.options)
        client = make_llm(self.options, budget)
        with attempt_journal(self.name, ctx, task) as journal:
            ws = Workspace(task, target, evaluate_fn(ctx, task, self.options), budget, journal=journal)
            untouched = ws.files[PROGRAM]
            try:
                why = (offline_loop(ws, self.max_turns) if client is None
                       else model_loop(client, ws, self.options, ctx.sample_idx, self.max_turns))
            except BudgetExceeded as e:
                why = f"budget: {e}"
            except LekaError as e:  # a model/transport error ends the loop; the best so far is the answer
                why = f"error: {e}"
        final = ws.final()
        meta = {"stop_reason": why, "tool_calls": ws.calls, "evaluations": len(ws.results),
                "shape": "flat tool loop with feedback, no layers"}
        inter = [as_sample(r, self.name, proposer_name(client), budget, {"intermediate": True})
                 for r in ws.results]
        if final is None and ws.files[PROGRAM] == untouched:  # nothing was ever written
            return inter + [no_candidate_sample(task, target, self.options, self.name, proposer_name(client), budget,
                                                f"the kernel was never changed ({why})", meta)]
        # The answer is judged afresh on new and held-back inputs (uncharged, like LEKA's finalize): the loop
        # saw its own inputs' verdicts and could have fitted them. Nothing built: the program as it stands.
        judge = evaluate_fn(ctx, task, self.options, holdout=True)
        source = final["source"] if final is not None else ws.files[PROGRAM]
        if final is None:
            meta["final_uncharged"] = True
        else:
            meta["search_speedup"] = final.get("speedup")
        final = dict(judge(source, True), source=source)
        return inter + [as_sample(final, self.name, proposer_name(client), budget, meta)]


register_method(CodeLoopMethod.name, CodeLoopMethod)
