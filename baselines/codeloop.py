"""`codeloop`: a Claude-Code-style agent on ONE flat program, no layers. The model drives a loop of native
tool calls (OpenAI function calling / Anthropic tool use) over the workspace tools of workspace.py —
read_task, read_file, write_file, edit_file, compile, run_tests, profile — until the budget ends, the
model stops calling tools, or `max_turns` model turns have passed. The answer is the best profiled
correct program.

With no model it runs the offline proposer as a flat loop with feedback and no layers: each turn asks
for ONE whole schedule of the best program so far (the schedule rules, then memory decisions once those
run dry), writes it to kernel.py and profiles it; every result is fed back as history. No algorithm
rewrites, no layer walk, no control proposal: what is left of LEKA is greedy search with feedback.
Both are strategies of the one search loop (leka.methods.search: ToolLoop, FlatGreedy), measured through the
workspace.
"""
from __future__ import annotations

import json
from typing import Any

from leka.budget import BudgetExceeded
from leka.errors import LekaError
from leka.llm.base import reply_tokens
from leka.methods import MethodContext, Sample, register_method
from leka.methods.options import attempt_budget
from leka.methods.search import BUILD_KINDS, Candidate, Measured, run_search

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


class ToolLoop:
    """codeloop's strategy with a model (leka.methods.search): model turns whose read/write tools the
    workspace answers at once; each build tool (compile, run_tests, profile) is a candidate for the one
    measurement path, its answer goes back as that call's tool message. Calls run in the order the model
    made them; the next turn is asked when a reply's calls are all answered."""

    def __init__(self, client: Any, ws: Workspace, options: dict[str, Any], sample_idx: int, max_turns: int) -> None:
        from leka.proposers.prompting import render

        variables = {"task": json.dumps(ws.task.summary(), sort_keys=True), "target_name": ws.target.name,
                     "facts": json.dumps(ws.target.facts, sort_keys=True)}
        self.prompt = render("codeloop", ws.target.family, variables, str(options.get("prompt", "v1")))
        forced = tool_choice(client, options) == "force"
        self.tools = forced_tools() if forced else TOOLS
        self.choice: str | None = ACT if forced else None  # the forced tool's name; None: the model picks
        self.client, self.ws, self.sample_idx, self.max_turns = client, ws, sample_idx, max_turns
        self.max_tokens = int(options.get("max_tokens") or reply_tokens(client, 4000, TURN_CALL_S))
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": self.prompt.user}]
        self.pending: list[dict[str, Any]] = []  # calls of the last reply not answered yet
        self.turns = 0
        self.stop_reason = ""

    def generate(self) -> list[Candidate] | None:
        while True:
            if not self.pending and not self._next_turn():
                return None
            call = self.pending.pop(0)
            if call["name"] == "finish":
                self.stop_reason, self.pending = "the model called finish", []
                return None
            if call["name"] in BUILD_KINDS:
                args = call["arguments"] if isinstance(call.get("arguments"), dict) else {}
                if "_unparsed" not in args:
                    return [Candidate(call["name"], path=str(args.get("path") or PROGRAM), meta={"id": call["id"]})]
            self._answer(call["id"], self.ws.call(call["name"], call["arguments"]))

    def notify(self, candidates: list[Candidate], results: list[Measured]) -> None:
        for cand, got in zip(candidates, results):
            self._answer(cand.meta["id"], got.reply)

    def _next_turn(self) -> bool:
        if self.turns >= self.max_turns:
            self.stop_reason = f"turn cap ({self.max_turns}) reached"
            return False
        self.turns += 1
        reply = self.client.complete(self.prompt.system, self.messages, tools=self.tools, tool_choice=self.choice,
                                     sample=self.sample_idx, max_tokens=self.max_tokens)
        self.messages.append({"role": "assistant", "content": reply.text, "tool_calls": list(reply.tool_calls)})
        self.pending = [_unwrap(c) for c in reply.tool_calls]
        if not self.pending:
            self.stop_reason = "the model stopped calling tools"
        return bool(self.pending)

    def _answer(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})


def _history_entry(layer: str, ir: Any, res: dict[str, Any]) -> dict[str, Any]:
    return {"layer": layer, "summary": ir.summary(layer), "compiled": res.get("compiled", False),
            "correct": res.get("correct", False), "failure": res.get("failure"), "error": res.get("error"),
            "speedup": res.get("speedup"), "candidate_ms": res.get("candidate_ms")}


class FlatGreedy:
    """codeloop's strategy without a model (see the module docstring): each round ONE whole schedule of the
    best program so far from the offline rules (schedule rules, then memory decisions once those run
    dry), profiled; every result is fed back as history."""

    def __init__(self, ws: Workspace, max_turns: int) -> None:
        from leka.ir import CandidateIR
        from leka.proposers import OfflineProposer

        self.ws, self.max_turns, self.proposer = ws, max_turns, OfflineProposer()
        self.best, self.best_speedup = CandidateIR.initial(ws.task), 1.0
        self.history: list[dict[str, Any]] = []
        self.seen, self.layers, self.turns = {self.best.hash()}, ["schedule", "memory"], 0
        self.stop_reason = ""
        self._ir: Any = None

    def generate(self) -> list[Candidate] | None:
        from leka.proposers import ProposalRequest

        while self.turns < self.max_turns:
            self.turns += 1
            if not self.layers:
                self.stop_reason = "the offline proposer has nothing new"
                return None
            req = ProposalRequest(layer=self.layers[0], ir=self.best, task=self.ws.task, target=self.ws.target,
                                  history=self.history, k=1)
            props = [p for p in self.proposer.propose(req) if p.ir.hash() not in self.seen]
            if not props:
                self.layers.pop(0)
                continue
            self._ir = props[0].ir
            self.seen.add(self._ir.hash())
            try:
                return [Candidate("profile", self._ir.to_tvmscript(self.ws.target))]
            except Exception as e:  # an IRApplyError is feedback like a compile error
                self.history.append(_history_entry(self.layers[0], self._ir, {"failure": "invalid", "error": str(e)}))
        self.stop_reason = f"turn cap ({self.max_turns}) reached"
        return None

    def notify(self, candidates: list[Candidate], results: list[Measured]) -> None:
        res = results[0].result or {}
        self.history.append(_history_entry(self.layers[0], self._ir, res))
        if res.get("correct") and (res.get("speedup") or 0) > self.best_speedup:
            self.best, self.best_speedup = self._ir, float(res["speedup"])


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
                strategy = (FlatGreedy(ws, self.max_turns) if client is None
                            else ToolLoop(client, ws, self.options, ctx.sample_idx, self.max_turns))
                why = run_search(strategy, ws.measure)
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
