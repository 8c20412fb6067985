"""The evaluator for a remote device: leka.evaluator.Evaluator with its worker swapped for `RPCDevice`.

The protocol (fresh inputs, trials, alternating candidate/baseline rounds, checks) is the evaluator's own;
only where each request is served changes. `load` goes to a sandboxed build process (rpc_build.py: no network)
that answers with an exported library; this trusted process uploads it through the tracker's session and
serves `run` and `time` with the evaluation worker's own data-moving code (worker._run_trials, worker._time)
over RPC tensors. A remote failure (server gone, session dropped) is a recorded crash of that candidate; the
next request opens a new session.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from leka.evaluator import EvalConfig, Evaluator
from leka.evaluator.pool import Worker, WorkerFault

from .rpc import RPCError, RPCLoaded, RPCSpec, one_line, release_session, shared_session


class _BuildWorker(Worker):
    """The evaluator's sandboxed worker process, running the build-and-export server instead."""

    def command(self, fd_in: int, fd_out: int) -> list[str]:
        return [sys.executable, "-m", "leka.runners.rpc_build", "--in", str(fd_in), "--out", str(fd_out)]


class RPCDevice:
    """Answers the evaluator's worker requests (load/run/time/drop) with a remote device."""

    def __init__(self, spec: RPCSpec, mem_limit_gb: float = 8.0) -> None:
        self.spec = spec
        self.builder = _BuildWorker(mem_limit_gb)
        self.isolation = (f"build: {self.builder.isolation}; run: TVM RPC {spec} (outputs poisoned and inputs "
                          "mixed before each timing round)")
        self.session: Any = None
        self.loaded: dict[str, Any] = {}
        self.last_request_s: float | None = None
        self.starts = 0

    # the pool.Worker surface the evaluator uses
    @property
    def alive(self) -> bool:
        return self.builder.alive

    def start(self) -> None:
        self.session = shared_session(self.spec)  # a one-line RPCError up front when the farm is not there
        self.builder.start()
        self.starts += 1

    def sweep(self) -> int:
        return self.builder.sweep()

    def kill(self) -> None:
        self.builder.kill()
        self.loaded.clear()
        if self.session is not None:
            release_session(self.spec)
        self.session = None

    def close(self) -> None:
        self.kill()
        self.builder.close()

    def request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        from leka.evaluator.worker import _run_trials, _time

        op = req.get("op")
        t0 = time.perf_counter()
        if op == "drop":
            self.loaded.pop(req["key"], None)
            return {"ok": True}
        if op == "load":
            return self._load(req, timeout_s)
        try:
            loaded = self.loaded[req["key"]]
            reply = _run_trials(loaded, req) if op == "run" else _time(loaded, self.loaded[req["baseline_key"]], req)
        except KeyError:
            return {"ok": False, "kind": "runtime_error", "stage": op, "error": "not loaded on the remote device"}
        except Exception as e:  # noqa: BLE001 - TVM RPC errors: the session is gone or the kernel failed there
            self._drop_session()
            raise WorkerFault("crash", f"remote device {self.spec}: {one_line(e)}") from None
        # The board's time_evaluator reports kernel time; this side's wall clock also holds every RPC round
        # trip, so the wall-clock plausibility check of local workers does not apply (docs/evaluator.md).
        self.last_request_s = None if op == "time" else time.perf_counter() - t0
        return reply if isinstance(reply, dict) else {"ok": False, "error": "no reply"}

    def _load(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        from leka.evaluator.worker import _Loaded

        key = req["key"]
        if key in self.loaded:
            return {"ok": True, **self.loaded[key].info}
        reply = self.builder.request(req, timeout_s)  # WorkerFault passes through: the evaluator records it
        if not reply.get("ok"):
            return reply
        try:
            if self.session is None:
                self.session = shared_session(self.spec)
            lib = bytes(reply["lib"].tobytes())
            exe = RPCLoaded(self.session, lib, reply["suffix"], reply["entry"], reply["params"], reply["family"])
        except RPCError as e:
            raise WorkerFault("crash", str(e)) from None
        except Exception as e:  # noqa: BLE001
            self._drop_session()
            raise WorkerFault("crash", f"remote device {self.spec}: load failed: {one_line(e)}") from None
        info = {k: reply.get(k) for k in ("compile_s", "build_s", "binary_bytes", "source_kind")}
        info.update(build_only=False, remote=str(self.spec))
        self.loaded[key] = _Loaded(exe, info)
        return {"ok": True, **info}

    def _drop_session(self) -> None:
        self.loaded.clear()
        if self.session is not None:
            release_session(self.spec, failed=True)
        self.session = None



class RPCEvaluator(Evaluator):
    """Evaluator whose candidates run on the device behind `rpc` (TRACKER_HOST:PORT:KEY)."""

    def __init__(self, target: Any, config: EvalConfig | None = None, rpc: str | RPCSpec = ""):
        super().__init__(target, config)
        self.worker.close()  # the local worker is never started
        self.rpc = rpc if isinstance(rpc, RPCSpec) else RPCSpec.parse(rpc)
        self.worker = RPCDevice(self.rpc, self.config.mem_limit_gb)  # type: ignore[assignment]
