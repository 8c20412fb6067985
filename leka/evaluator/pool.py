"""Worker processes that survive their candidates: a segfault, a hang or a memory blow-up in the
worker becomes a recorded failure, the worker is replaced, and the run goes on.

The worker is ``python -m leka.evaluator.worker`` in a bubblewrap sandbox (sandbox.py); requests and
replies are frames of JSON + raw array bytes (wire.py) on two pipes of their own, its stdout/stderr go
to a log. A reply that is not a well-formed frame is a crash of that candidate: nothing the worker
sends is unpickled or evaluated here.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .cpu_time import Usage, tree_usage
from .sandbox import Limits, Sandbox, isolation, worker_env
from .wire import WireError, read_frame, write_frame

MAX_REPLY_BYTES = 4 << 30  # a reply frame larger than this is refused before it is read


@dataclass
class WorkerFault(Exception):
    kind: str  # "timeout" | "crash"
    message: str

    def __str__(self) -> str:
        return self.message


class WorkerLike(Protocol):
    """What the evaluator asks of its worker: Worker below, or a remote board (leka.runners.rpc_evaluator)."""

    last_request_s: float | None  # this side's wall clock of the last request

    @property
    def isolation(self) -> str: ...
    @property
    def alive(self) -> bool: ...
    def start(self) -> None: ...
    def close(self) -> None: ...
    def request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]: ...
    def usage(self) -> Usage | None: ...
    def sweep(self) -> int: ...


class Worker:
    """One sandboxed worker process, kept across evaluations (see docs/evaluator.md, "Sandbox")."""

    def __init__(self, mem_limit_gb: float = 8.0, threads: int | None = None):
        self.limits = Limits(mem_gb=mem_limit_gb)
        self.threads = threads  # TVM CPU thread pool size in the worker (None: TVM's own default)
        self.isolation = isolation()  # recorded in every result
        self._sandbox: Sandbox | None = None
        self._to_worker = self._from_worker = -1
        self._log = tempfile.NamedTemporaryFile(prefix="leka-worker-", suffix=".log", delete=False).name
        self.starts = 0
        self.last_request_s: float | None = None  # this side's wall clock of the last request

    def start(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        log_fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        extra = {"TVM_BACKTRACE": "1"}
        if self.threads:
            # TVM sizes its CPU thread pool at first use from TVM_NUM_THREADS, else from
            # hardware_concurrency() halved on x86 (it assumes SMT): on a 2-core, 1-thread-per-core machine
            # a parallel loop would run on one thread. The target's core count is what it is measured on.
            extra["TVM_NUM_THREADS"] = str(self.threads)
        try:
            self._sandbox = Sandbox(self.command(req_r, rep_w), env=worker_env(extra), limits=self.limits,
                                    log_fd=log_fd, pass_fds=(req_r, rep_w))
        finally:
            for fd in (req_r, rep_w, log_fd):
                os.close(fd)
        os.set_blocking(req_w, False)
        os.set_blocking(rep_r, False)
        self._to_worker, self._from_worker = req_w, rep_r
        self.starts += 1

    def command(self, fd_in: int, fd_out: int) -> list[str]:
        """The worker's command line: it reads requests from fd_in and writes replies to fd_out."""
        return [sys.executable, "-m", "leka.evaluator.worker", "--in", str(fd_in), "--out", str(fd_out)]

    @property
    def alive(self) -> bool:
        return self._sandbox is not None and self._sandbox.alive

    def request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if not self.alive:
            self.restart()
        assert self._sandbox is not None
        deadline = time.monotonic() + timeout_s
        # CPU seconds the worker may spend on this request (all its threads): it sets RLIMIT_CPU from it.
        req = {**req, "cpu_budget_s": timeout_s * (os.cpu_count() or 1) + 10}
        if select.select([self._from_worker], [], [], 0)[0]:
            # Bytes before a request: a reply sent ahead of its request would answer the wrong one.
            if os.read(self._from_worker, 1):
                return self._fault("crash", "the worker sent data no request asked for")
            return self._fault("crash", self._death_message())
        t0 = time.perf_counter()
        try:
            write_frame(self._to_worker, req, deadline)
        except WireError:
            return self._fault("timeout", f"the worker took no request within {timeout_s:g} s")
        except OSError:
            return self._fault("crash", "worker died before the request")
        try:
            if req.get("op") == "time":  # raised from here: the worker has no privilege to do it
                with self._sandbox.priority():
                    reply = read_frame(self._from_worker, deadline, MAX_REPLY_BYTES)
            else:
                reply = read_frame(self._from_worker, deadline, MAX_REPLY_BYTES)
        except TimeoutError:
            if self.alive:
                return self._fault("timeout", f"no reply within {timeout_s:g} s (stage: {req.get('op')})")
            return self._fault("crash", self._death_message())
        except EOFError:
            return self._fault("crash", self._death_message())
        except WireError as e:
            return self._fault("crash", f"malformed reply from the worker: {e}")
        self.last_request_s = time.perf_counter() - t0
        return reply

    def usage(self) -> Usage | None:
        """CPU and run-queue wait the worker's processes have had so far, from the kernel (cpu_time.py)."""
        if self._sandbox is None or not self.alive:
            return None
        return tree_usage(list(self._sandbox.pids()) or [self._sandbox.worker_pid() or self._sandbox.proc.pid])

    def sweep(self) -> int:
        """Kill whatever the worker's candidates left running in the sandbox; returns how many."""
        return self._sandbox.sweep() if self._sandbox is not None and self._sandbox.sandboxed else 0

    def _death_message(self) -> str:
        assert self._sandbox is not None
        proc = self._sandbox.proc
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and self._sandbox.sandboxed and code > 128:
            code = -(code - 128)  # bwrap passes a signal death on as 128 + signal number
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            msg = f"worker killed by {name}"
        else:
            msg = f"worker exited with code {code}"
        tail = self.log_tail()
        return f"{msg}{': ' + tail if tail else ''}"

    def log_tail(self, n: int = 1) -> str:
        try:
            with open(self._log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
            return " | ".join(lines[-n:])[:300]
        except OSError:
            return ""

    def _fault(self, kind: str, message: str):
        self.kill()
        raise WorkerFault(kind, message)

    def kill(self) -> None:
        if self._sandbox is not None:
            self._sandbox.kill()
        for fd in (self._to_worker, self._from_worker):
            if fd >= 0:
                os.close(fd)
        self._sandbox, self._to_worker, self._from_worker = None, -1, -1

    def restart(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        self.kill()
        try:
            os.unlink(self._log)
        except OSError:
            pass
