"""`direct`: one-shot generation. Each sample is ONE model call that writes the whole kernel at once as a
scheduled TVMScript PrimFunc (the flat form), then one evaluation; n samples give Correct@k / Fast@p@k.

With no model (`--option llm=...` absent) it runs the offline proposer in the same shape: one proposal of
a whole flat schedule for the task's own algorithm, no feedback (sample i takes the proposer's i-th
schedule, as temperature sampling would give a different program per sample). Every sample names its
proposer. The model answers {"kernel": "..."} (constrained by a JSON schema where the server takes one); two
replies without a program end the attempt as `no_candidate` (no kernel was made), not as a compile error. Charged like any candidate: the call (calls, tokens, usd) plus one compile and one measurement.
"""
from __future__ import annotations

import json
from typing import Any

from leka.methods import MethodContext, Sample, register_method
from leka.methods.options import attempt_budget
from leka.methods.search import Candidate, Measured, run_search

from leka.llm import LLMReplyError
from leka.llm.base import reply_tokens

from .common import (PROGRAM_SCHEMA, as_sample, evaluate_fn, extract_program, make_llm, no_candidate_sample,
                     proposer_name, setup)
from .workspace import Workspace, initial_program


PROGRAM_CALL_S = 60.0  # seconds a whole program may take to write on a slow local model


def offline_flat_schedule(task: Any, target: Any, sample_idx: int) -> tuple[str, dict[str, Any]]:
    """The offline proposer's (sample_idx)-th whole schedule of the task's own algorithm, flattened."""
    from leka.ir import CandidateIR
    from leka.proposers import OfflineProposer, ProposalRequest

    ir = CandidateIR.initial(task)
    props = OfflineProposer().propose(ProposalRequest(layer="schedule", ir=ir, task=task, target=target,
                                                      history=[], k=sample_idx + 1))
    if not props:
        return ir.to_tvmscript(target), {"schedule": "offline proposer: no schedule rule applies; naive"}
    pick = props[min(sample_idx, len(props) - 1)]
    return pick.ir.to_tvmscript(target), {"schedule": pick.ir.notes.get("rule"), "rationale": pick.rationale}


def model_program(client: Any, task: Any, target: Any, options: dict[str, Any],
                  sample_idx: int) -> tuple[str, dict[str, Any]]:
    """One model call (plus at most one parse-feedback call) for the whole kernel."""
    from leka.proposers.prompting import render

    variables = {"task": json.dumps(task.summary(), sort_keys=True), "target_name": target.name,
                 "facts": json.dumps(target.facts, sort_keys=True), "program": initial_program(task, target)}
    prompt = render("direct", target.family, variables, str(options.get("prompt", "v2")))
    source, completions = client.complete_parsed(
        prompt.system, [{"role": "user", "content": prompt.user}], extract_program,
        max_tokens=int(options.get("max_tokens") or reply_tokens(client, 4000, PROGRAM_CALL_S)),
        temperature=0.7 if sample_idx else 0.0, sample=sample_idx,
        schema=PROGRAM_SCHEMA)
    return source, {"prompt_variant": prompt.variant, "prompt_hash": completions[-1].prompt_hash,
                    "calls": len(completions), "cached": all(c.cached for c in completions),
                    "tokens": sum(c.input_tokens + c.output_tokens for c in completions)}


class OneProgram:
    """direct's search strategy (leka.methods.search): one program, proposed once, measured once, no feedback.
    `made` is None while no program exists; `no_kernel` says why the model made none."""

    def __init__(self, propose: Any, kind: str) -> None:
        self.propose, self.kind = propose, kind
        self.stop_reason = "one program, no feedback"
        self.meta: dict[str, Any] = {}
        self.no_kernel: str | None = None
        self.made: Measured | None = None

    def generate(self) -> list[Candidate] | None:
        if self.made is not None or self.no_kernel is not None:
            return None
        try:
            source, self.meta = self.propose()
        except LLMReplyError as e:  # two replies without a program: the model made no kernel
            self.meta = {"calls": len(e.completions), "errors": e.errors}
            self.no_kernel = f"no program in the model's replies: {e.errors[-1]}"
            return None
        return [Candidate(self.kind, source)]

    def notify(self, candidates: list[Candidate], results: list[Measured]) -> None:
        self.made = results[0]


class DirectMethod:
    name = "direct"

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = setup(self.name, options)

    @property
    def is_llm(self) -> bool:
        return bool(self.options.get("llm"))

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        budget = attempt_budget(ctx, self.options)
        client = make_llm(self.options, budget)
        if client is None:
            def propose() -> tuple[str, dict[str, Any]]:
                return offline_flat_schedule(task, target, ctx.sample_idx)
        else:
            def propose() -> tuple[str, dict[str, Any]]:
                return model_program(client, task, target, self.options, ctx.sample_idx)
        strategy = OneProgram(propose, "profile" if ctx.evaluator.config.measure else "run_tests")
        # One program, no feedback: its only evaluation is the final answer, judged on held-back inputs too.
        ws = Workspace(task, target, evaluate_fn(ctx, task, self.options, holdout=True), budget)
        run_search(strategy, ws.measure)
        meta = dict(strategy.meta, shape="one flat program, no feedback")
        if strategy.made is None or strategy.made.result is None:
            why = strategy.no_kernel or f"no program was measured: {strategy.made.reply if strategy.made else '-'}"
            return [no_candidate_sample(task, target, self.options, self.name, proposer_name(client), budget,
                                        why, meta)]
        return [as_sample(strategy.made.result, self.name, proposer_name(client), budget, meta)]


register_method(DirectMethod.name, DirectMethod)
