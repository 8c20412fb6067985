"""The Ray executor: one Ray task per job (a benchmark sample, a kernel of `leka optimize`), outcomes streamed
back as they finish, progress events through a Ray queue (ray.util.queue) drained by the driver.

Resources of each task: one CPU; `num_gpus=1` when the job needs a GPU; and, for a timed job, one unit of the
custom resource `leka_timing`, which every node offers once (`ray start --resources '{"leka_timing": 1}'`), so a
node runs at most one timed measurement at a time and neighbours never disturb a timing. Samples whose device
is remote (`--rpc`) or that are not timed (`--no-measure`) do not ask for it. Without an address a local Ray
instance is started (light: 2 CPUs, no dashboard) and shut down at close().
"""
from __future__ import annotations

import os
import queue as queue_mod
import socket
from pathlib import Path
from typing import Any, Generator, Iterable, Iterator

from leka.errors import LekaError

from .base import PLACED, EventSink, Job, JobContext, JobDone, JobFn, SampleOutcome, SampleSpec, run_samples, where

TIMING_RESOURCE = "leka_timing"
_REPO = str(Path(__file__).resolve().parents[2])  # so Ray workers of a local instance import this leka


class RayExecutorError(LekaError):
    pass


def _ray_job(fn: JobFn, payload: Any, key: str, events: Any) -> dict[str, Any]:
    """Body of one Ray task: says where it runs, then runs the job (in the Ray worker process, whose evaluator
    is kept across the tasks it runs: leka.executors.base.EVALUATORS)."""
    import ray

    # Ray runs tasks in its session folder under /tmp, which the evaluator's sandbox covers with its own tmpfs.
    if os.getcwd().startswith("/tmp"):
        os.chdir(_REPO if os.path.isdir(_REPO) else "/")
    placed = where("ray", ray.get_runtime_context().get_node_id())
    send = events.put if events is not None else None
    ctx = JobContext(key, placed, send)
    ctx.put((key, PLACED, placed))
    return {"value": fn(payload, ctx), "where": placed}


def _check_reachable(address: str) -> None:
    """A quick one-line error for an address nothing listens on (Ray itself retries for a minute)."""
    if address in ("auto", "local") or ":" not in address:
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise RayExecutorError(f"--ray-address {address}: no Ray cluster answers there ({e})") from None


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int = 2) -> None:
        try:
            import ray
        except ImportError:
            raise RayExecutorError("--executor ray needs Ray (pip install 'ray>=2.9')") from None
        self._ray = ray
        self.started_here = address is None
        if address is not None:
            _check_reachable(address)
        if ray.is_initialized():
            self.started_here = False
        elif address is None:
            # address="local": a new instance even where `ray start` left a cluster behind (ray.init() would join it)
            ray.init(address="local", num_cpus=num_cpus, resources={TIMING_RESOURCE: 1}, include_dashboard=False,
                     log_to_driver=False, object_store_memory=256 << 20, configure_logging=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                         p for p in (_REPO, os.environ.get("PYTHONPATH")) if p)}})
        else:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except Exception as e:  # noqa: BLE001 - any failure to join is one line for the user
                raise RayExecutorError(f"--ray-address {address}: {str(e).strip().splitlines()[0]}") from None
        self.nodes = {n["NodeID"]: n.get("NodeManagerHostname", "?") for n in ray.nodes() if n.get("Alive")}

    def _options(self, job: Job) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if job.gpu:
            opts["num_gpus"] = 1
        if job.timed:
            total = self._ray.cluster_resources().get(TIMING_RESOURCE, 0)
            if total < 1:
                raise RayExecutorError(f"no node of the Ray cluster offers the resource {TIMING_RESOURCE!r}: start "
                                       f"each node with `ray start ... --resources '{{\"{TIMING_RESOURCE}\": 1}}'`")
            opts["resources"] = {TIMING_RESOURCE: 1}
        return opts

    def run_jobs(self, fn: JobFn, jobs: Iterable[Job], on_event: EventSink | None = None) -> Generator[JobDone, None, None]:
        ray = self._ray
        remote = ray.remote(_ray_job)
        events = None
        if on_event is not None:
            from ray.util.queue import Queue

            events = Queue(actor_options={"num_cpus": 0})
        pending = {remote.options(**self._options(j)).remote(fn, j.payload, j.key, events): j for j in jobs}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                _drain(events, on_event)
                for ref in done:
                    yield self._outcome(ref, pending.pop(ref))
        finally:
            for ref in pending:  # the driver stopped early: its queued and running tasks go with it
                ray.cancel(ref, force=True)
            if events is not None:
                events.shutdown()

    def _outcome(self, ref: Any, job: Job) -> JobDone:
        try:
            d = self._ray.get(ref)
        except Exception as e:  # noqa: BLE001 - a lost node or dead worker fails this job only
            from leka.errors import error_line

            return JobDone(job, error=f"ray task failed: {error_line(e)}")
        return JobDone(job, d["value"], where=d["where"])

    def run(self, specs: Iterable[SampleSpec], on_event: EventSink | None = None) -> Iterator[SampleOutcome]:
        return run_samples(self, specs, on_event)

    def close(self) -> None:
        if self.started_here and self._ray.is_initialized():
            self._ray.shutdown()


def _drain(events: Any, on_event: EventSink | None) -> None:
    while events is not None and on_event is not None:
        try:
            key, kind, payload = events.get_nowait()
        except queue_mod.Empty:
            return
        on_event(key, kind, payload)
