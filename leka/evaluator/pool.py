"""Worker processes that survive their candidates: a segfault, a hang or a memory blow-up in the
worker becomes a recorded failure, the worker is replaced, and the run goes on."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
from dataclasses import dataclass
from typing import Any

from .worker import serve


@dataclass
class WorkerFault(Exception):
    kind: str  # "timeout" | "crash"
    message: str

    def __str__(self) -> str:
        return self.message


class Worker:
    """One isolated worker process (spawned, so it shares no state with the parent)."""

    def __init__(self, mem_limit_gb: float = 8.0, threads: int | None = None):
        self.mem_limit_gb = mem_limit_gb
        self.threads = threads  # TVM CPU thread pool size in the worker (None: TVM's own default)
        self._ctx = mp.get_context("spawn")
        self._proc: mp.process.BaseProcess | None = None
        self._conn = None
        self._log = tempfile.NamedTemporaryFile(prefix="leka-worker-", suffix=".log", delete=False).name
        self.starts = 0

    def start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=serve, args=(child, self._log, self.mem_limit_gb, self.threads), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if not self.alive:
            self.restart()
        assert self._conn is not None
        try:
            self._conn.send(req)
        except (BrokenPipeError, OSError):
            return self._fault("crash", "worker died before the request")
        if not self._conn.poll(timeout_s):
            if self.alive:
                return self._fault("timeout", f"no reply within {timeout_s:g} s (stage: {req.get('op')})")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            return self._fault("crash", self._death_message())

    def _death_message(self) -> str:
        assert self._proc is not None
        self._proc.join(timeout=2)
        code = self._proc.exitcode
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
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None

    def restart(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        self.kill()
        try:
            os.unlink(self._log)
        except OSError:
            pass
