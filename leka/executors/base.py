"""The executor interface: submit sample specs, get their outcomes back as they finish.

A `SampleSpec` is plain data (task id, method, target, evaluation settings) so it can travel to another
process or node; a `SampleOutcome` is the finished attempt as plain dict records, written to the store by
the driver only (leka/executors/fanout.py). `run_sample` is the one implementation of "one attempt": the
local executor calls it in this process, the Ray executor inside a Ray task.
"""
from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Protocol

from leka.errors import LekaError

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class SampleSpec:
    run_id: str
    task_id: str
    sample_idx: int
    method: str
    target_spec: Any  # preset name or TVM target dict
    options: dict[str, Any] = field(default_factory=dict)
    task_paths: tuple[str, ...] = ()
    trials: int = 5
    measure: bool = True
    rpc: str | None = None  # TRACKER_HOST:PORT:KEY when the device is remote (leka/runners/rpc.py)

    def key(self) -> tuple[str, str, int]:
        return (self.task_id, self.method, self.sample_idx)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SampleOutcome:
    spec: SampleSpec
    record: dict[str, Any]  # the sample's final record (build_record), "where" included
    candidates: list[dict[str, Any]] = field(default_factory=list)  # intermediate records
    not_applicable: str | None = None  # the method does not apply: nothing is stored


class Executor(Protocol):
    name: str

    def run(self, specs: Iterable[SampleSpec]) -> Iterator[SampleOutcome]:
        """Every spec's outcome, in the order they finish."""
        ...

    def close(self) -> None: ...


def where(executor: str, node: str | None = None) -> dict[str, Any]:
    """Where a sample ran: recorded in its record as "where"."""
    return {"executor": executor, "host": socket.gethostname(), "node": node or socket.gethostname(),
            "pid": os.getpid()}


def run_sample(spec: SampleSpec, evaluator: Any, placed: dict[str, Any]) -> SampleOutcome:
    """One attempt of spec's method on its task with `evaluator` (a failure of the method is a failed record,
    as in leka.bench.runner.run_benchmark)."""
    from leka.bench.runner import build_record, failed_record
    from leka.methods import MethodContext, MethodNotApplicable, get_method
    from leka.tasks import get_task, load_task_folder

    for p in spec.task_paths:
        load_task_folder(p)
    task, method = get_task(spec.task_id), get_method(spec.method, spec.options)
    target = evaluator.target
    applies = getattr(method, "applies", None)
    why = applies(task, target) if applies else None
    if why:
        return SampleOutcome(spec, {}, not_applicable=why)
    ctx = MethodContext(evaluator=evaluator, budget=None, store=None, run_id=spec.run_id, options=spec.options,
                        sample_idx=spec.sample_idx)
    try:
        result = method.run(task, target, ctx)
        if not result:
            raise LekaError("method returned no sample")
        rec = build_record(task, target, result[-1], spec.sample_idx)
        inter = [build_record(task, target, s, spec.sample_idx) for s in result[:-1]]
    except MethodNotApplicable as e:
        return SampleOutcome(spec, {}, not_applicable=str(e))
    except Exception as e:  # noqa: BLE001 - a method crash is a failed sample, not a dead run
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        err = msg if isinstance(e, LekaError) else f"{type(e).__name__}: {msg}"
        rec, inter = failed_record(task, target, spec.method, spec.sample_idx, err[:2000], None), []
    rec["where"] = {**placed, "device": f"rpc {spec.rpc}"} if spec.rpc else placed
    return SampleOutcome(spec, rec, inter)


def make_evaluator(spec: SampleSpec) -> Any:
    from leka.evaluator import EvalConfig

    return evaluator_for(spec.target_spec, EvalConfig(trials=spec.trials, measure=spec.measure), spec.rpc)


def evaluator_for(target: Any, config: Any, rpc: str | None) -> Any:
    """The evaluator of a target: this machine's device, or the remote one behind a TVM RPC tracker
    (rpc = TRACKER_HOST:PORT:KEY, else the preset's entry in the farm config, leka.runners.rpc.farm_path)."""
    if not rpc:
        from leka.runners.rpc import farm_rpc
        from leka.targets import get_target

        rpc = farm_rpc(get_target(target).name)
    if rpc:
        from leka.runners.rpc_evaluator import RPCEvaluator

        return RPCEvaluator(target, config, rpc)
    from leka.evaluator import Evaluator

    return Evaluator(target, config)


def get_executor(name: str, **kw: Any) -> Executor:
    """An executor by name; kw: the Ray executor's address (None: a local Ray instance) and num_cpus."""
    if name == "local":
        from .local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(**kw)
    raise LekaError(f"--executor {name!r}: executors are {', '.join(EXECUTORS)}")
