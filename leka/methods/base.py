"""The Method interface, the sample record and the method registry.

A method turns (task, target) into kernels: `run(task, target, ctx) -> list[Sample]` is ONE
independent attempt (one pass@k sample). The last Sample it returns is the attempt's final answer;
earlier ones are intermediate candidates (stored, not scored). Methods register a factory by name;
`leka bench run --method NAME` looks them up here. Built-ins: tvm-naive, tvm-dlight, onnxruntime;
the agent (leka) and the generation baselines of baselines/ (direct, codeloop, metaschedule).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

from leka.errors import LekaError


class UnknownMethodError(LekaError):
    pass


class MethodNotApplicable(LekaError):
    """The method has no way to handle this task/target (e.g. onnxruntime without an ONNX form)."""


@dataclass
class Sample:
    """One evaluated candidate: the evaluator's EvalResult JSON plus who made it and what it cost."""

    result: dict[str, Any]
    method: str
    candidate_hash: str | None = None
    proposer: str | None = None
    budget_spent: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # the candidate text (kept for the final answer)

    def to_record(self) -> dict[str, Any]:
        rec = dict(self.result)
        rec.update(method=self.method, candidate_hash=self.candidate_hash or rec.get("candidate_hash"),
                   proposer=self.proposer, budget=self.budget_spent, meta=self.meta)
        return rec


# The verdict of an attempt that ended with no kernel of its own (the untouched baseline, a model that never
# wrote a usable program): the same for every method, never "correct at 1.00x". Correct@k and Fast@p count
# made kernels only (leka.bench.metrics.is_correct needs correct=True).
NO_CANDIDATE = "no_candidate"


def no_candidate_result(task: Any, target: Any, baseline: str, why: str) -> dict[str, Any]:
    """An EvalResult-shaped record of an attempt that made no kernel; `why` says what happened."""
    return {"task": getattr(task, "id", str(task)), "target": getattr(target, "name", str(target)),
            "compiled": False, "correct": False, "failure": NO_CANDIDATE, "status": NO_CANDIDATE,
            "error": why, "speedup": None, "candidate_ms": None, "baseline_ms": None, "baseline": baseline,
            "candidate_hash": None}


@dataclass
class MethodContext:
    evaluator: Any  # leka.evaluator.Evaluator for the run's target
    budget: Any  # leka.budget.Budget shared by every consumer of the run
    store: Any  # leka.bench.store.ResultStore (methods may log intermediate data; the runner stores samples)
    run_id: str
    options: dict[str, Any]
    progress: Callable[[str], None] | None = None
    sample_idx: int = 0  # which independent attempt this is (seed for stochastic methods)

    def say(self, msg: str) -> None:
        if self.progress is not None:
            self.progress(msg)


@runtime_checkable
class Method(Protocol):
    name: str

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]: ...


_REGISTRY: dict[str, Callable[[dict[str, Any]], Method]] = {}
# Modules that register methods when imported: the built-ins, then optional providers (the agent).
_BUILTIN_PROVIDERS = ("leka.methods.tvm_naive", "leka.methods.tvm_dlight", "leka.methods.onnxruntime_method")
_OPTIONAL_PROVIDERS = ("leka.methods.leka_method", "baselines.direct", "baselines.codeloop",
                       "baselines.metaschedule")
_UNAVAILABLE: dict[str, str] = {}  # optional provider -> why it could not be imported
_loaded = False


def register_method(name: str, factory: Callable[[dict[str, Any]], Method]) -> None:
    _REGISTRY[name] = factory


def _load_providers() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _BUILTIN_PROVIDERS:
        importlib.import_module(mod)
    for mod in _OPTIONAL_PROVIDERS:
        try:
            importlib.import_module(mod)
        except ImportError as e:  # keep the reason for the "unknown method" message
            _UNAVAILABLE[mod] = f"{type(e).__name__}: {e}"


def list_methods() -> list[str]:
    _load_providers()
    return sorted(_REGISTRY)


def get_method(name: str, options: dict[str, Any] | None = None) -> Method:
    _load_providers()
    factory = _REGISTRY.get(name)
    if factory is None:
        why = "".join(f"; {m} not importable ({e})" for m, e in _UNAVAILABLE.items())
        raise UnknownMethodError(f"unknown method {name!r}; known: {', '.join(list_methods())}{why}")
    return factory(dict(options or {}))


def evaluate_source(ctx: MethodContext, task: Any, source: str, method: str, *, measure: bool | None = None,
                    meta: dict[str, Any] | None = None, holdout: bool = True) -> Sample:
    """Charge the budget, evaluate `source` against tvm-naive, wrap it as a Sample. A final answer is judged
    on the held-back input families too (holdout); pass holdout=False for feedback a search acts on."""
    if ctx.budget is not None:
        ctx.budget.charge("compiles")
        if measure is not False and ctx.evaluator.config.measure:
            ctx.budget.charge("measurements")
    res = ctx.evaluator.evaluate(task, source, baseline=ctx.options.get("baseline", "tvm-naive"), measure=measure,
                                 holdout=holdout)
    rec = res.to_json()
    return Sample(result=rec, method=method, candidate_hash=rec.get("candidate_hash"), proposer=None,
                  budget_spent=ctx.budget.spent() if ctx.budget is not None else {}, meta=dict(meta or {}),
                  source=source)
