"""The executor interface: submit jobs, get their outcomes back as they finish.

A job is a module-level function and a plain-data payload (so it can travel to another process or node),
`fn(payload, ctx)`; `ctx` knows where the job runs and forwards the job's progress events to the driver. Three
kinds of work fan out through it: benchmark samples (`SampleSpec`, run by `sample_job`; a `SampleOutcome` holds
the finished attempt as plain dict records), the kernels of `leka optimize` (leka/executors/tuning.py, jobs of
leka.optimize.tune.run_tuning_job) and the cells of `leka experiment run`. The driver alone writes the stores
(leka/executors/fanout.py, and leka.bench.runner.run_benchmark for a run in this process). `run_sample` runs one
attempt (leka.bench.runner.attempt) wherever it is: the local executor in this process (with the driver's
evaluator and budget, `LocalEnv`), the pool executor in a worker process, the Ray executor inside a Ray task.
"""
from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Generator, Iterable, Iterator, Protocol

from leka.errors import LekaError

EXECUTORS = ("local", "ray")
PLACED = "placed"  # the event an executor sends as a job starts on a node: payload = where(...)

EventSink = Callable[[str, str, Any], None]  # (job key, kind, payload), called in the driver


@dataclass(frozen=True)
class Job:
    key: str  # unique within one run_jobs call
    payload: Any  # picklable argument of the job function
    timed: bool = True  # takes timed measurements here: one such job per node at a time
    gpu: bool = False  # needs a GPU of the node it runs on


@dataclass
class JobDone:
    job: Job
    value: Any = None
    error: str | None = None  # the job raised, or its worker or node died
    where: dict[str, Any] | None = None


@dataclass
class LocalEnv:
    """What attempts run in the driver's own process share with it (the local executor's; a Ray task has
    none): the driver's evaluator and target, the run's budget accountant, the store, progress messages, the
    method object (options applied) and the tasks by id (a run's tasks need not be in the registry)."""
    evaluator: Any
    target: Any
    budget: Any = None
    store: Any = None
    progress: Callable[[str], None] | None = None
    method: Any = None
    tasks: dict[str, Any] = field(default_factory=dict)


class JobContext:
    """What a running job sees: where it runs, the driver's LocalEnv when it runs in the driver's process, and
    `put((key, kind, payload))` to send a progress event to the driver (the shape of a multiprocessing queue's
    put, so job functions take either)."""

    def __init__(self, key: str, placed: dict[str, Any], send: Callable[[tuple], None] | None,
                 env: LocalEnv | None = None) -> None:
        self.key, self.where, self._send, self.env = key, placed, send, env

    def put(self, item: tuple, *_: Any, **__: Any) -> None:
        if self._send is not None:
            self._send(item)


JobFn = Callable[[Any, JobContext], Any]


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

    def job_key(self) -> str:
        return f"{self.run_id}/{self.task_id}/{self.method}/{self.sample_idx}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SampleSpec":
        return cls(**{**d, "task_paths": tuple(d.get("task_paths") or ())})


@dataclass
class SampleOutcome:
    spec: SampleSpec
    record: dict[str, Any]  # the sample's final record (build_record), "where" included
    candidates: list[dict[str, Any]] = field(default_factory=list)  # intermediate records
    not_applicable: str | None = None  # the method does not apply: nothing is stored
    pending: bool = False  # paused on measurements owed by a remote host: nothing is stored yet
    stopped: str | None = None  # "budget: ..." when the run's budget ran out: nothing is stored, the run stops


class Executor(Protocol):
    name: str

    def run_jobs(self, fn: JobFn, jobs: Iterable[Job], on_event: EventSink | None = None) -> Generator[JobDone, None, None]:
        """Every job's outcome, in the order they finish; on_event gets PLACED and the jobs' own events. Closing
        the generator early stops the jobs still queued or running."""
        ...

    def run(self, specs: Iterable[SampleSpec], on_event: EventSink | None = None) -> Iterator[SampleOutcome]:
        """Every sample's outcome, in the order they finish (run_samples)."""
        ...

    def close(self) -> None: ...


def where(executor: str, node: str | None = None) -> dict[str, Any]:
    """Where a sample ran: recorded in its record as "where"."""
    return {"executor": executor, "host": socket.gethostname(), "node": node or socket.gethostname(),
            "pid": os.getpid()}


def run_sample(spec: SampleSpec, evaluator: Any, placed: dict[str, Any], env: LocalEnv | None = None) -> SampleOutcome:
    """One attempt of spec's method on its task with `evaluator` (leka.bench.runner.attempt), as an outcome:
    "not applicable", "pending" and the run's budget running out come back as its fields, not as errors."""
    from leka.bench.runner import attempt
    from leka.budget import BudgetExceeded
    from leka.methods import MethodContext, MethodNotApplicable, get_method
    from leka.remote.pending import MeasurementPending
    from leka.tasks import get_task, load_task_folder

    for p in spec.task_paths:
        load_task_folder(p)
    env = env or LocalEnv(evaluator, evaluator.target)
    task = env.tasks.get(spec.task_id) or get_task(spec.task_id)
    method = env.method if env.method is not None else get_method(spec.method, spec.options)
    applies = getattr(method, "applies", None)
    why = applies(task, env.target) if applies else None
    if why:
        return SampleOutcome(spec, {}, not_applicable=why)
    ctx = MethodContext(evaluator=evaluator, budget=env.budget, store=env.store, run_id=spec.run_id,
                        options=spec.options, progress=env.progress, sample_idx=spec.sample_idx)
    try:
        if env.budget is not None:
            env.budget.check_time()
        rec, inter = attempt(task, env.target, method, spec.sample_idx, ctx, env.budget)
    except MethodNotApplicable as e:
        return SampleOutcome(spec, {}, not_applicable=str(e))
    except MeasurementPending:
        return SampleOutcome(spec, {}, pending=True)
    except BudgetExceeded as e:
        return SampleOutcome(spec, {}, stopped=f"budget: {e}")
    rec["where"] = {**placed, "device": f"rpc {spec.rpc}"} if spec.rpc else placed
    return SampleOutcome(spec, rec, inter)


class EvaluatorCache:
    """One evaluator per process, kept while the target and evaluation settings stay the same (a worker start
    costs a TVM import)."""

    def __init__(self) -> None:
        self._ev: Any = None
        self._ev_key: tuple | None = None

    def get(self, spec: SampleSpec) -> Any:
        key = (repr(spec.target_spec), spec.trials, spec.measure, spec.rpc)
        if key != self._ev_key:
            self.close()
            self._ev = make_evaluator(spec).__enter__()
            self._ev_key = key
        return self._ev

    def close(self) -> None:
        if self._ev is not None:
            self._ev.close()
        self._ev, self._ev_key = None, None


EVALUATORS = EvaluatorCache()  # this process's: the local executor's, or a Ray worker process's


def sample_job(spec_json: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    """The job of one benchmark sample. A board's session (--rpc) is not held between the tasks of a Ray
    worker: other workers queue for that board."""
    spec = SampleSpec.from_json(spec_json)
    if ctx.env is not None:  # in the driver's process: its evaluator, budget and method
        out = run_sample(spec, ctx.env.evaluator, ctx.where, ctx.env)
    elif spec.rpc and ctx.where.get("executor") != "local":
        with make_evaluator(spec) as ev:
            out = run_sample(spec, ev, ctx.where)
    else:
        out = run_sample(spec, EVALUATORS.get(spec), ctx.where)
    return {"record": out.record, "candidates": out.candidates, "not_applicable": out.not_applicable,
            "pending": out.pending, "stopped": out.stopped}


def needs_gpu(target_spec: Any) -> bool:
    from leka.targets import get_target

    return get_target(target_spec).family == "cuda"


def run_samples(executor: Executor, specs: Iterable[SampleSpec],
                on_event: EventSink | None = None) -> Iterator[SampleOutcome]:
    """Samples as jobs of `executor`: a measured sample on this side's device is a timed job; a sample whose
    job died is a failed record made here."""
    by_key = {s.job_key(): s for s in specs}
    jobs = [Job(k, s.to_json(), timed=s.measure and not s.rpc, gpu=not s.rpc and needs_gpu(s.target_spec))
            for k, s in by_key.items()]
    for d in executor.run_jobs(sample_job, jobs, on_event):
        spec = by_key[d.job.key]
        if d.error is not None:
            yield crashed_outcome(spec, d.error, executor.name)
        else:
            v = d.value
            yield SampleOutcome(spec, v["record"], v["candidates"], v["not_applicable"], v["pending"], v["stopped"])


def crashed_outcome(spec: SampleSpec, error: str, executor: str) -> SampleOutcome:
    """A sample whose job died before it answered: a failed record, made here."""
    from leka.bench.runner import failed_record
    from leka.targets import get_target
    from leka.tasks import get_task

    rec = failed_record(get_task(spec.task_id), get_target(spec.target_spec), spec.method, spec.sample_idx,
                        error, None)
    rec["where"] = {"executor": executor, "node": None}
    return SampleOutcome(spec, rec)


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
