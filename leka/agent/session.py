"""Real wiring of a LEKA run: leka.ir for candidates, leka.proposers for proposals, leka.evaluator for
compile/verify/profile in isolated workers, leka.budget for limits. Used by `leka tune` and the
"leka" bench method; the graph itself only sees the callables of AgentContext.
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from leka.storage import leka_home

from .context import AgentContext, default_budget_errors
from .progress import NoProgress, Progress
from .run import drive, new_run_id
from .state import Policy
from .trace import TraceStore

OFFLINE_LABEL = "leka-offline-rules (offline, no LLM)"


@dataclass
class TuneOptions:
    task_id: str
    target: str = "host-cpu"
    llm: str | None = None  # PROVIDER:MODEL; None = the embedded offline proposer
    base_url: str | None = None
    budget: str | None = None  # Budget.parse spec
    policy: Policy = field(default_factory=Policy)
    trials: int = 5  # correctness trials per candidate
    baseline: str | None = None  # None: the target's (leka.agent.floor.default_baseline)
    tasks_paths: list[str] = field(default_factory=list)  # user task folders (--tasks)
    # wall-clock bounds (leka.agent.deadline.Limits): per step, and per task (None: from the budget's minutes)
    step_limit_s: float | None = None
    task_limit_s: float | None = None
    rpc: str | None = None  # TRACKER_HOST:PORT:KEY: measure on the remote device (leka/runners/rpc.py)

    def baseline_for(self, target: Any) -> str:
        from .floor import default_baseline

        return self.baseline or default_baseline(target)

    def limits(self) -> Any:
        from .deadline import Limits

        return Limits(step_s=self.step_limit_s, task_s=self.task_limit_s)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["policy"] = self.policy.to_json()
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TuneOptions":
        d = dict(d)
        d["policy"] = Policy.from_json(d.get("policy") or {})
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def resumed_options(run_id: str, stored: dict[str, Any], given: dict[str, Any]) -> TuneOptions:
    """A stored run's options, its task folders and proposer checked against the command line's (`given`)."""
    from leka.resume_guard import refuse_widening, resolved_paths

    opts = TuneOptions.from_json(stored)
    refuse_widening(run_id, [("--tasks", stored.get("tasks_paths"), given.get("tasks_paths")),
                             ("--llm", opts.llm, given.get("llm")), ("--base-url", opts.base_url, given.get("base_url"))])
    opts.tasks_paths = resolved_paths(given.get("tasks_paths"))
    return opts


def graph_refusal(task: Any) -> str | None:
    """Why LEKA does not tune `task` as one kernel, or None. A graph (L3) task is a Relax module of many
    fused kernels; the layered IR schedules one PrimFunc."""
    if getattr(task, "level", None) == 3 or "graph" in (getattr(task, "tags", ()) or ()):
        return (f"{task.id} is a graph task: use `leka optimize` on its ONNX model, which tunes it per fused "
                "kernel")
    return None


def proposer_label(proposer: Any) -> str:
    name = getattr(proposer, "name", "?")
    if not getattr(proposer, "is_llm", False):
        return OFFLINE_LABEL if name == "leka-offline-rules" else f"{name} (offline, no LLM)"
    return f"{name} (LLM)"


def make_proposer(llm: str | None, base_url: str | None, budget: Any, variants: dict[str, str] | None = None,
                  pick: str | None = None, seed: int = 0) -> Any:
    from leka.proposers import get_proposer

    return get_proposer(llm, base_url=base_url, budget=budget, cache_path=leka_home() / "llm_cache.sqlite",
                        variants=variants, pick=pick, seed=seed)


def propose_fn(proposer: Any, task: Any, target: Any) -> Callable[..., list[Any]]:
    from leka.proposers import ProposalRequest

    def propose(layer: str, ir: Any, history: list[dict[str, Any]], k: int,
                walked: tuple[str, ...] = ("algorithm", "schedule", "memory")) -> list[Any]:
        return list(proposer.propose(ProposalRequest(layer=layer, ir=ir, task=task, target=target,
                                                     history=history, k=k, walked=tuple(walked))))
    return propose


def kill_evaluator_workers() -> None:
    """Make an evaluation blocked past its deadline return: the evaluator workers this process started
    (`-m leka.evaluator.worker`, inside their sandbox) are killed, and only their processes, so the thread
    waiting on one reads end-of-file and the evaluator records the fault and cleans up in that thread (its
    pipes are never closed under it); the next request starts a new worker."""
    import psutil

    for child in psutil.Process().children():
        try:
            if "leka.evaluator.worker" in " ".join(child.cmdline()):
                child.kill()
        except psutil.Error:  # gone already
            continue


def evaluate_fn(evaluator: Any, task: Any, baseline: str) -> Callable[[str], dict[str, Any]]:
    def evaluate(source: str) -> dict[str, Any]:
        return evaluator.evaluate(task, source, baseline=baseline).to_json()
    return evaluate


def fresh_worker_fn(target: Any, config: Any, task: Any, baseline: str,
                    rpc: str | None = None) -> Callable[[str], dict[str, Any]]:
    """Finalize's re-measure: a new Evaluator (new worker process) that lives for one evaluation, on new
    inputs: the evaluator's fresh seed and its held-back input families (holdout)."""
    from dataclasses import replace

    config = replace(config, holdout=True)

    def remeasure(source: str) -> dict[str, Any]:
        from leka.executors.base import evaluator_for

        with evaluator_for(target, config, rpc) as ev:
            return ev.evaluate(task, source, baseline=baseline).to_json()
    return remeasure


# Seconds a step spends besides its model calls (preparing and measuring k candidates), on top of the calls.
STEP_WORK_S = 30.0


def sized_for_model(limits: Any, proposer: Any) -> Any:
    """Limits whose default step fits a slow local model's two calls (a reply and its one feedback, each as
    long as the server's measured speed says, leka.llm.local.local_limits) plus the step's own work; an
    explicit step limit stays as given."""
    from dataclasses import replace

    from leka.proposers.llm import MENU_CALL_S

    client_limits = getattr(getattr(proposer, "client", None), "limits", None)
    if limits.step_s is not None or not callable(client_limits):
        return limits
    per_call = float(client_limits(call_seconds=MENU_CALL_S)["seconds_per_call"])
    return replace(limits, min_step_s=2 * per_call + STEP_WORK_S)


def build_context(run_id: str, task: Any, target: Any, proposer: Any, evaluate: Callable[[str], dict[str, Any]],
                  remeasure: Callable[[str], dict[str, Any]] | None, budget: Any, store: TraceStore,
                  limits: Any = None, baseline: str | None = None) -> AgentContext:
    """limits: leka.agent.deadline.Limits (default: the default step limit, task limit from the budget);
    the run's clock starts here. baseline: what evaluate measures against (it sets the floor, floor.py)."""
    from leka.ir import CandidateIR

    from .deadline import Limits, RunClock
    from .floor import floor_fn

    return AgentContext(run_id=run_id, task=task, target=target, propose=propose_fn(proposer, task, target),
                        evaluate=evaluate, remeasure=remeasure,
                        ir_from_json=lambda d: CandidateIR.from_json(d, task), journal=store, budget=budget,
                        proposer_name=getattr(proposer, "name", "?"), budget_errors=default_budget_errors(),
                        initial_ir=CandidateIR.initial(task).to_json(),
                        clock=RunClock(sized_for_model(limits or Limits(), proposer), budget),
                        cancel=kill_evaluator_workers,
                        floor=floor_fn(task, target, baseline))


def tune(opts: TuneOptions | None = None, *, resume: str | None = None, store: TraceStore | None = None,
         progress: Callable[[str], Progress] | None = None,
         on_start: Callable[[str, str], None] | None = None, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run LEKA on one task (or resume run `resume`) and return the final record.

    progress(title) makes the display; on_start(run_id, proposer_label) is called before the first step.
    given: on resume, the command line's tasks_paths, llm and base_url, which must equal the stored ones
    (leka.resume_guard); none given means none.
    """
    from leka.budget import Budget
    from leka.evaluator import EvalConfig
    from leka.executors.base import evaluator_for
    from leka.targets import get_target
    from leka.tasks import all_tasks, get_task

    store = store or TraceStore()
    if resume:
        resume = store.resolve(resume)  # a unique prefix is enough, as in `leka trace`
        run = store.get_run(resume)
        if "tune" not in run["options"]:
            from leka.errors import LekaError

            raise LekaError(f"run {resume} belongs to bench run {run['options'].get('bench_run')}; "
                            "resume it with `leka bench run --resume`")
        opts = resumed_options(resume, run["options"]["tune"], given or {})
        run_id = resume
    elif opts is None:
        raise ValueError("tune() needs options or a run to resume")
    else:
        run_id = new_run_id()
    if opts.tasks_paths:
        all_tasks(opts.tasks_paths)
    task = get_task(opts.task_id)
    why = graph_refusal(task)
    if why:
        from leka.errors import LekaError

        raise LekaError(why)
    target = get_target(opts.target)
    if not target.runnable and not opts.rpc:  # tuning needs measurements: a build-only target has none here
        from leka.errors import NotRunnableError

        raise NotRunnableError(f"cannot tune for {target.name} on this machine: {target.why_not_runnable}")
    budget = Budget.parse(opts.budget)
    proposer = make_proposer(opts.llm, opts.base_url, budget)
    label = proposer_label(proposer)
    if on_start is not None:
        on_start(run_id, label)
    config = EvalConfig(trials=opts.trials, measure=True)
    with ExitStack() as stack:
        evaluator = stack.enter_context(evaluator_for(target, config, opts.rpc))
        baseline = opts.baseline_for(target)
        ctx = build_context(run_id, task, target, proposer, evaluate_fn(evaluator, task, baseline),
                            fresh_worker_fn(target, config, task, baseline, opts.rpc), budget, store,
                            opts.limits(), baseline)
        title = f"LEKA {'resuming ' if resume else ''}{run_id}: {task.id} on {target.name} — proposer {label}"
        view = progress(title) if progress is not None else NoProgress()
        final = drive(ctx, store, policy=opts.policy, resume=bool(resume), progress=view,
                      options={"tune": opts.to_json()})
    final = dict(final)
    final["proposer_label"] = label
    final["budget_limits"] = {k: v for k, v in budget.limits.items() if v is not None}
    return final
