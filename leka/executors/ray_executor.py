"""The Ray executor: one Ray task per benchmark sample, results streamed back as they finish.

Resources of each task: one CPU; `num_gpus=1` when the target needs a GPU here; and one unit of the custom
resource `leka_timing`, which every node offers once (`ray start --resources '{"leka_timing": 1}'`), so a
node runs at most one timed measurement at a time and neighbours never disturb a timing. Samples whose device
is remote (`--rpc`) or that are not timed (`--no-measure`) do not ask for it. Without an address a local Ray
instance is started (light: 2 CPUs, no dashboard) and shut down at close().
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Iterable, Iterator

from leka.errors import LekaError

from .base import SampleOutcome, SampleSpec, make_evaluator, run_sample, where
from .local import LocalExecutor

TIMING_RESOURCE = "leka_timing"
_REPO = str(Path(__file__).resolve().parents[2])  # so Ray workers of a local instance import this leka


class RayExecutorError(LekaError):
    pass


_EVALUATOR = LocalExecutor()  # per Ray worker process: its evaluator worker is kept across the tasks it runs


def _ray_sample(spec_json: dict[str, Any]) -> dict[str, Any]:
    """Body of one Ray task: the attempt, judged by this Ray worker process's evaluator (started by its first
    task, as the local executor keeps one: a worker start costs a TVM import)."""
    import ray

    spec = SampleSpec(**{**spec_json, "task_paths": tuple(spec_json.get("task_paths") or ())})
    # Ray runs tasks in its session folder under /tmp, which the evaluator's sandbox covers with its own tmpfs.
    if os.getcwd().startswith("/tmp"):
        os.chdir(_REPO if os.path.isdir(_REPO) else "/")
    placed = where("ray", ray.get_runtime_context().get_node_id())
    if spec.rpc:  # a board's session is not held between tasks: other workers queue for that board
        with make_evaluator(spec) as ev:
            out = run_sample(spec, ev, placed)
    else:
        out = run_sample(spec, _EVALUATOR.evaluator(spec), placed)
    return {"record": out.record, "candidates": out.candidates, "not_applicable": out.not_applicable}


def needs_gpu(target_spec: Any) -> bool:
    from leka.targets import get_target

    return get_target(target_spec).family == "cuda"


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
            ray.init(num_cpus=num_cpus, resources={TIMING_RESOURCE: 1}, include_dashboard=False,
                     log_to_driver=False, object_store_memory=256 << 20, configure_logging=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                         p for p in (_REPO, os.environ.get("PYTHONPATH")) if p)}})
        else:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except Exception as e:  # noqa: BLE001 - any failure to join is one line for the user
                raise RayExecutorError(f"--ray-address {address}: {str(e).strip().splitlines()[0]}") from None
        self.nodes = {n["NodeID"]: n.get("NodeManagerHostname", "?") for n in ray.nodes() if n.get("Alive")}

    def _options(self, spec: SampleSpec) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if not spec.rpc and needs_gpu(spec.target_spec):
            opts["num_gpus"] = 1
        if spec.measure and not spec.rpc:
            total = self._ray.cluster_resources().get(TIMING_RESOURCE, 0)
            if total < 1:
                raise RayExecutorError(f"no node of the Ray cluster offers the resource {TIMING_RESOURCE!r}: start "
                                       f"each node with `ray start ... --resources '{{\"{TIMING_RESOURCE}\": 1}}'`")
            opts["resources"] = {TIMING_RESOURCE: 1}
        return opts

    def run(self, specs: Iterable[SampleSpec]) -> Iterator[SampleOutcome]:
        ray = self._ray
        remote = ray.remote(_ray_sample)
        pending = {remote.options(**self._options(s)).remote(s.to_json()): s for s in specs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            spec = pending.pop(done[0])
            try:
                d = ray.get(done[0])
            except Exception as e:  # noqa: BLE001 - a lost node or dead worker fails this sample only
                from leka.evaluator.worker import one_line

                yield crashed_outcome(spec, f"ray task failed: {one_line(e)}")
                continue
            yield SampleOutcome(spec, d["record"], d["candidates"], d["not_applicable"])

    def close(self) -> None:
        if self.started_here and self._ray.is_initialized():
            self._ray.shutdown()



def crashed_outcome(spec: SampleSpec, error: str) -> SampleOutcome:
    """A sample whose task died before it answered: a failed record, made here."""
    from leka.bench.runner import failed_record
    from leka.targets import get_target
    from leka.tasks import get_task

    rec = failed_record(get_task(spec.task_id), get_target(spec.target_spec), spec.method, spec.sample_idx,
                        error, None)
    rec["where"] = {"executor": "ray", "node": None}
    return SampleOutcome(spec, rec)
