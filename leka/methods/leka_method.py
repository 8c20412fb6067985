"""`leka bench run --method leka`: one LEKA agent run per attempt, as a bench method.

Options (from `leka bench run`): llm, base_url (proposer; default the offline rules), pick (random|rules:
the menu controls, no model: a uniform pick or the rules' ranking from the menu a model would see), k, plateau_pct,
plateau_steps, max_retries, max_steps, step_limit_s, task_limit_s (wall-clock bounds, leka.agent.deadline),
control, layers ("schedule", "algorithm+schedule", ...: the
layers walked), feedback (false: no history shown to the proposer), prompts (per-layer prompt variants
of the LLM proposer, "schedule=v2,memory=v1"), agent_budget (a Budget spec applied to each attempt on
top of the run's shared budget), baseline. The agent's run id is derived from the bench run, task and attempt,
so re-running a killed bench resumes the unfinished agent run instead of starting over.
"""
from __future__ import annotations

from typing import Any

from leka.remote.pending import MeasurementPending

from .base import MethodContext, Sample, no_candidate_result, register_method
from .options import ATTEMPT_BUDGET, as_bool, attempt_budget, check_options


class LekaMethod:
    name = "leka"

    def __init__(self, options: dict[str, Any]) -> None:
        from leka.agent.state import Policy
        from leka.proposers.prompting import parse_variants

        check_options(self.name, options, {"llm", "base_url", ATTEMPT_BUDGET, "baseline", "feedback", "prompts",
                                           "step_limit_s", "task_limit_s", "remote_store", "pick",
                                           *Policy.__dataclass_fields__})
        self.options = options
        knobs = {k: options[k] for k in Policy.__dataclass_fields__ if k in options}
        if "control" in knobs:
            knobs["control"] = as_bool(self.name, "control", knobs["control"])
        if "feedback" in options and not as_bool(self.name, "feedback", options["feedback"]):
            knobs["history_len"] = 0  # the proposer sees no history: every request is a first request
        try:
            self.policy = Policy.from_json(knobs)
        except (TypeError, ValueError) as e:
            from leka.errors import LekaError

            raise LekaError(f"method leka: bad option value: {e}") from None
        self.prompt_variants = parse_variants(options.get("prompts"))
        if options.get("pick") is not None:
            from leka.errors import LekaError
            from leka.proposers import PICKS

            if options["pick"] not in PICKS or options.get("llm") not in (None, "", "offline"):
                raise LekaError(f"method leka: pick={options['pick']!r}: expected one of {', '.join(PICKS)}, "
                                "without llm (a control that picks from the menu with no model)")
        self.limits = _limits(options)
        self._proposer: Any = None

    def applies(self, task: Any, target: Any) -> str | None:
        from leka.agent.session import graph_refusal

        return graph_refusal(task)

    @property
    def is_llm(self) -> bool:
        return bool(self.options.get("llm"))

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        from leka.agent.session import (build_context, evaluate_fn, fresh_worker_fn, make_proposer,
                                        proposer_label)
        from leka.agent.progress import NoProgress
        from leka.agent.run import drive
        from leka.agent.trace import TraceStore, UnknownRunError

        budget = attempt_budget(ctx, self.options)
        # per attempt, so model calls are charged to the attempt's own limits too (the response cache
        # makes a rebuilt client free)
        self._proposer = make_proposer(self.options.get("llm"), self.options.get("base_url"), budget,
                                       self.prompt_variants, pick=self.options.get("pick"), seed=ctx.sample_idx)
        from leka.agent.floor import default_baseline

        baseline = self.options.get("baseline") or default_baseline(target)
        run_id = f"{ctx.run_id}.{task.id}.{ctx.sample_idx}"
        store = TraceStore()
        try:
            try:
                earlier = store.get_run(run_id)  # an earlier (maybe killed) attempt: resume it, or reuse its result
                resume = True
            except UnknownRunError:
                resume = False
            if resume:
                _check_same_settings(run_id, earlier["options"], self.options)
            if self.options.get("remote_store"):  # measured in rounds on a remote host (leka/remote)
                evaluate, remeasure = _remote_fns(self.options["remote_store"], run_id, task, target, baseline)
            else:
                evaluate = evaluate_fn(ctx.evaluator, task, baseline)
                remeasure = fresh_worker_fn(target, ctx.evaluator.config, task, baseline)
            agent_ctx = build_context(run_id, task, target, self._proposer, evaluate, remeasure, budget, store,
                                      self.limits, baseline)
            ctx.say(f"leka: {task.id} run {run_id} ({proposer_label(self._proposer)})")
            try:
                final = drive(agent_ctx, store, policy=self.policy, resume=resume, progress=NoProgress(),
                              options={"bench_run": ctx.run_id, "method_options": self.options},
                              restore_budget=False)
            except MeasurementPending:  # paused on its checkpoint; `leka bench run --resume` continues it
                store.set_status(run_id, "pending")
                raise
            steps = store.steps(run_id)
        finally:
            store.close()
        samples = [Sample(result=_as_result(c, task, target, baseline), method=self.name,
                          candidate_hash=c.get("source_hash"), proposer=c.get("proposer"),
                          budget_spent=s.get("budget_spent", {}), meta={"agent_run": run_id, "step": s["step"],
                                                                       "layer": s["layer"], "menu": c.get("menu"),
                                                                       "summary": c.get("summary")})
                   for s in steps for c in s.get("candidates", []) if c.get("valid") and c.get("failure") != "budget"]
        final_meta = {"agent_run": run_id, "search_speedup": final.get("search_speedup"),
                      "contributions": final.get("contributions", {}).get("by_layer"),
                      "stop_reason": final.get("stop_reason"), "steps": final.get("steps"),
                      "best_layer": final.get("best_layer"),
                      "menu_picks": [dict(c["menu"], correct=c.get("correct"), speedup=c.get("speedup"))
                                     for s in steps for c in s.get("candidates", []) if c.get("menu")]}
        result = dict(final.get("eval") or {})
        if final.get("best_step") is None:  # the answer is the untouched initial IR: no kernel was made
            result = no_candidate_result(task, target, baseline, "no proposal replaced the baseline lowering "
                                         f"({final.get('stop_reason') or 'search ended'})")
        samples.append(Sample(result=result, method=self.name,
                              candidate_hash=final.get("source_hash"), proposer=final.get("proposer"),
                              budget_spent=final.get("budget_spent", {}), meta=final_meta,
                              source=_final_source(final, task, target, baseline)))
        return samples


def _remote_fns(path: str, run_id: str, task: Any, target: Any, baseline: str) -> tuple[Any, Any]:
    """evaluate and finalize's re-measure answered by the remote host's ingested results (leka/remote)."""
    from leka.remote.pending import PendingStore, remote_evaluate_fn

    store = PendingStore(path)
    name = getattr(target, "name", str(target))
    return (remote_evaluate_fn(store, run_id, task, name, baseline),
            remote_evaluate_fn(store, run_id, task, name, baseline, salt="final"))


def _final_source(final: dict[str, Any], task: Any, target: Any, baseline: str) -> str | None:
    """The final kernel's TVMScript, kept in the store so `leka bench export --scripts` can write it."""
    from leka.agent.floor import floor_fn
    from leka.errors import LekaError
    from leka.kernel_export import ir_script

    floor = floor_fn(task, target, baseline)
    if final.get("floor") and floor is not None:
        return floor()
    if not final.get("best_ir"):
        return None
    try:
        return ir_script(final["best_ir"], task, target)
    except LekaError:
        return None


def _check_same_settings(run_id: str, stored: dict[str, Any], options: dict[str, Any]) -> None:
    """An agent run is reused only under the options it was made with (a rerun with a larger budget must
    not return the earlier run's result)."""
    from leka.bench.runner import SettingsMismatch, settings_mismatch

    why = settings_mismatch({"options": stored.get("method_options", {})}, {"options": options})
    if why:
        raise SettingsMismatch(f"agent run {run_id} exists with other settings ({why}); use a new run id")


def _limits(options: dict[str, Any]) -> Any:
    """Wall-clock bounds per step and per task (seconds; defaults in leka.agent.deadline)."""
    from leka.agent.deadline import Limits
    from leka.errors import LekaError

    try:
        return Limits(**{key: float(options[opt]) for key, opt in (("step_s", "step_limit_s"), ("task_s", "task_limit_s"))
                         if opt in options})
    except ValueError as e:
        raise LekaError(f"method leka: step_limit_s/task_limit_s must be seconds > 0: {e}") from None


def _as_result(cand: dict[str, Any], task: Any, target: Any, baseline: str) -> dict[str, Any]:
    """An intermediate candidate as an EvalResult-shaped record (the trace keeps the essentials)."""
    return {"task": task.id, "target": getattr(target, "name", str(target)), "compiled": cand.get("compiled"),
            "correct": cand.get("correct"), "failure": cand.get("failure"), "error": cand.get("error"),
            "speedup": cand.get("speedup"), "candidate_ms": cand.get("candidate_ms"),
            "baseline_ms": cand.get("baseline_ms"), "baseline": baseline, "candidate_hash": cand.get("source_hash"),
            "remote": cand.get("remote")}


register_method(LekaMethod.name, LekaMethod)
