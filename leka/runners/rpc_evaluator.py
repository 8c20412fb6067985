"""The evaluator for a remote device: leka.evaluator.Evaluator with its worker swapped for `RPCDevice`.

The protocol (fresh inputs, trials, alternating candidate/baseline rounds, checks) is the evaluator's own;
only where each request is served changes. `load` goes to a sandboxed build process (rpc_build.py: no network)
that answers with an exported library; this trusted process uploads it through the tracker's session and
serves `run` and `time` with the evaluation worker's own data-moving code (worker._run_trials, worker._time)
over RPC tensors; before the first timing of a CPU kernel the build process also makes the board's timing
library (rpc_timing.py: the mix before every timed run), once per signature. A remote failure (server gone, session dropped) is a recorded crash of that candidate; the
next request opens a new session.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from leka.errors import error_line
from leka.evaluator import EvalConfig, Evaluator
from leka.evaluator.pool import Worker, WorkerFault

from .rpc import RPCError, RPCLoaded, RPCSpec, release_session, shared_session
from .rpc_timing import signature_key


class _BuildWorker(Worker):
    """The evaluator's sandboxed worker process, running the build-and-export server instead."""

    def command(self, fd_in: int, fd_out: int) -> list[str]:
        return [sys.executable, "-m", "leka.runners.rpc_build", "--in", str(fd_in), "--out", str(fd_out)]


class RPCDevice:
    """Answers the evaluator's worker requests (load/run/time/drop) with a remote device."""

    def __init__(self, spec: RPCSpec, mem_limit_gb: float = 8.0, family: str = "cpu") -> None:
        self.spec = spec
        self.builder = _BuildWorker(mem_limit_gb)
        self.per_round = family != "cpu"  # GPU boards: poisoned from here before each timing round (rpc_timing)
        self.session: Any = None
        self.loaded: dict[str, Any] = {}
        self.timing_libs: dict[str, bytes] = {}  # rpc_timing.signature_key -> the board's timing library
        self.last_request_s: float | None = None
        self.starts = 0

    # the pool.Worker surface the evaluator uses
    @property
    def isolation(self) -> str:
        when = "from here before each timing round" if self.per_round else "on the board before every timed run"
        return f"build: {self.builder.isolation}; run: TVM RPC {self.spec} (outputs poisoned and inputs mixed {when})"

    @property
    def alive(self) -> bool:
        return self.builder.alive

    def start(self) -> None:
        self.session = shared_session(self.spec)  # a one-line RPCError up front when the farm is not there
        self.builder.start()
        self.starts += 1

    def sweep(self) -> int:
        return self.builder.sweep()

    def usage(self) -> None:
        return None  # the kernels run on the board: no CPU time of theirs is seen here

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
            if op == "time":
                sides = (loaded, self.loaded[req["baseline_key"]])
                for side in sides:
                    self._timing_lib(side.exec, req, timeout_s)
                reply = _time(*sides, req)
            else:
                reply = _run_trials(loaded, req)
        except KeyError:
            return {"ok": False, "kind": "runtime_error", "stage": op, "error": "not loaded on the remote device"}
        except Exception as e:  # noqa: BLE001 - TVM RPC errors: the session is gone or the kernel failed there
            self._drop_session()
            raise WorkerFault("crash", f"remote device {self.spec}: {error_line(e)}") from None
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
            exe.target = req["target"]
        except RPCError as e:
            raise WorkerFault("crash", str(e)) from None
        except Exception as e:  # noqa: BLE001
            self._drop_session()
            raise WorkerFault("crash", f"remote device {self.spec}: load failed: {error_line(e)}") from None
        info = {k: reply.get(k) for k in ("compile_s", "build_s", "binary_bytes", "source_kind")}
        info.update(build_only=False, remote=str(self.spec))
        self.loaded[key] = _Loaded(exe, info)
        return {"ok": True, **info}

    def _timing_lib(self, exe: RPCLoaded, req: dict[str, Any], timeout_s: float) -> None:
        """Give a CPU kernel the board's timing library (built once per signature by the build process) so that
        every timed run follows the mix; GPU boards keep the poisoning per round (rpc_timing)."""
        if exe.timing_lib is not None or exe.family != "cpu":
            return
        outputs = [i for i, a in enumerate(req["args"]) if a[3] == "output"]
        key = signature_key(exe.target, exe.params, outputs, exe.entry)
        if key not in self.timing_libs:
            reply = self.builder.request({"op": "timing", "target": exe.target,
                                          "params": [[n, list(sh), d] for n, sh, d in exe.params],
                                          "outputs": outputs, "entry": exe.entry}, timeout_s)
            if not reply.get("ok"):
                raise RPCError(f"timing library for the board: {reply.get('error', '?')}")
            self.timing_libs[key] = bytes(reply["lib"].tobytes())
        exe.timing_lib = self.timing_libs[key]

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
        self.worker = RPCDevice(self.rpc, self.config.mem_limit_gb, self.target.family)
