"""Start, find and stop llama.cpp's OpenAI-compatible server (llama-cpp-python's ``python -m
llama_cpp.server``) on 127.0.0.1.

Each running server has a state file, LEKA_HOME/llm/servers/PORT.json (pid, port, model, served GGUF, log
path, speed), where ``leka llm status|stop`` and ``--llm local:MODEL`` find it; its log (requests and
llama.cpp's timings) is LEKA_HOME/llm/logs/NAME-PORT.log and outlives it. Flags: one thread (the default
thread count was 3-6x slower here), ``--logits_all False`` (logits of every prompt token grew the process to
3.4 GB), a context of DEFAULT_CTX tokens (the agent's layer prompts measured 1000-1400 tokens; a feedback
round adds the model's reply, up to max_tokens, and llama.cpp cuts max_tokens to what the context leaves).
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from leka.errors import LekaError
from leka.llm.local.models import LocalModel, parse_model, require, served_file

DEFAULT_CTX = 8192
READY_TIMEOUT_S = 180.0
SERVER_ENV = "LEKA_LLAMA_SERVER"  # the server command (default: this Python's -m llama_cpp.server)
SCOPE_ENV = "LEKA_LOCAL_SERVER"  # state file of the server a command started; its workers inherit it


class LocalServerError(LekaError):
    """The server could not be started or reached."""


@dataclass
class ServerState:
    pid: int
    port: int
    model: str  # LocalModel.key: "gemma3-270m" or a GGUF's absolute path
    name: str  # the model alias the server answers to
    gguf: str  # the file served (a copy with a chat template added, when one was)
    model_id: str  # identity of weights + template (the response cache's key part)
    log: str
    threads: int
    ctx: int
    owner: str  # "serve" (leka llm serve) or "command" (started for one command, stopped after it)
    started_at: float
    create_time: float  # the process's start time (kept for the record; identity is the command line)
    startup_s: float = 0.0
    speed: dict[str, Any] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.port}.json"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        tmp.replace(self.path)

    def process(self) -> Any:
        """The live server process (psutil.Process), or None when it is gone. Identified by its command line
        (`--port PORT`), not by create_time: psutil derives that from the boot time, which moves with
        the wall clock, and after hours a drift past any tolerance made a serving server look gone (its state
        file was then deleted and every later `--llm local:` lookup failed)."""
        import psutil

        try:
            proc = psutil.Process(self.pid)
            cmd = proc.cmdline()
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
        except psutil.Error:
            return None
        return proc if _serves_port(cmd, self.port) else None


def _serves_port(cmdline: list[str], port: int) -> bool:
    """A server command line of ours listening on `port` (start_server appends `--port PORT`); a recycled pid
    running anything else is not taken for the server."""
    return any(a == "--port" and b == str(port) for a, b in zip(cmdline, cmdline[1:]))


def state_dir() -> Path:
    from leka.agent.trace import leka_home

    return leka_home() / "llm" / "servers"


def _read_state(path: Path) -> ServerState | None:
    try:
        return ServerState(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def running_servers() -> list[ServerState]:
    """The live servers; state files of dead or unreadable ones are removed."""
    out = []
    for path in sorted(state_dir().glob("*.json")):
        state = _read_state(path)
        if state is not None and state.process() is not None:
            out.append(state)
        else:
            path.unlink(missing_ok=True)
    return out


def find_server(key: str) -> ServerState | None:
    """A live server of model `key`: the one this command started (SCOPE_ENV) first, else any."""
    scoped = os.environ.get(SCOPE_ENV)
    state = _read_state(Path(scoped)) if scoped else None
    if state is not None and state.model == key and state.process() is not None:
        return state
    return next((s for s in running_servers() if s.model == key), None)


def _free_port(port: int | None) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port or 0))
        except OSError:
            raise LocalServerError(f"port {port} on 127.0.0.1 is in use; pick another with --port") from None
        return s.getsockname()[1]


def server_command() -> list[str]:
    custom = os.environ.get(SERVER_ENV)
    if custom:
        return shlex.split(custom)
    require("llama_cpp", "the local model server")
    return [sys.executable, "-m", "llama_cpp.server"]


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        tail = [t.strip() for t in path.read_text(encoding="utf-8", errors="replace").splitlines() if t.strip()]
    except OSError:
        return ""
    return " | ".join(tail[-lines:])


def _wait_ready(proc: subprocess.Popen, state: ServerState, timeout_s: float) -> None:
    """Poll GET /v1/models until the server answers; fail early if it exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalServerError(f"the model server exited with code {proc.returncode} while starting: "
                                   f"{_log_tail(Path(state.log))} (log {state.log})")
        try:
            with urllib.request.urlopen(f"{state.base_url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise LocalServerError(f"the model server did not answer within {timeout_s:.0f} s (log {state.log})")


def start_server(model: LocalModel, *, port: int | None = None, threads: int = 1, ctx: int = DEFAULT_CTX,
                 owner: str = "serve", timeout_s: float = READY_TIMEOUT_S, probe: bool = True) -> ServerState:
    """Start a server of `model`, wait until it answers, measure its speed once, write its state file."""
    import psutil

    from leka.llm.local.speed import measure_speed

    if threads < 1 or ctx < 256:
        raise LocalServerError("--threads must be >= 1 and the context >= 256 tokens")
    command = server_command()
    gguf, model_id = served_file(model)
    port = _free_port(port)
    log = state_dir().parent / "logs" / f"{model.name}-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    args = [*command, "--model", str(gguf), "--model_alias", model.name, "--host", "127.0.0.1",
            "--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--n_ctx", str(ctx), "--logits_all", "False"]
    started = time.monotonic()
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # Ctrl-C in the terminal does not reach it
    state = ServerState(proc.pid, port, model.key, model.name, str(gguf), model_id, str(log), threads, ctx,
                        owner, time.time(), psutil.Process(proc.pid).create_time())
    try:
        _wait_ready(proc, state, timeout_s)
        state.startup_s = round(time.monotonic() - started, 2)
        state.save()
        if probe:
            state.speed = measure_speed(state.base_url, model.name)
            state.save()
    except BaseException:
        _terminate(proc.pid)
        state.path.unlink(missing_ok=True)
        raise
    return state


def _terminate(pid: int, timeout_s: float = 15.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after timeout_s."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our child: reap it
                    return
            except ChildProcessError:  # not our child (started by `leka llm serve`)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.1)


def stop_server(state: ServerState) -> bool:
    """Stop a server from its state; False when it was no longer running. Its log is kept."""
    running = state.process() is not None
    if running:
        _terminate(state.pid)
    state.path.unlink(missing_ok=True)
    return running


@contextmanager
def local_server(spec_model: str) -> Iterator[ServerState]:
    """The server for `--llm local:MODEL` during one command: a running one of that model, else one started
    now and stopped when the command ends. Workers of the command find it through SCOPE_ENV."""
    model = parse_model(spec_model)
    state = find_server(model.key)
    if state is not None:
        yield state
        return
    state = start_server(model, owner="command")
    previous = os.environ.get(SCOPE_ENV)
    os.environ[SCOPE_ENV] = str(state.path.resolve())
    try:
        yield state
    finally:
        if previous is None:
            os.environ.pop(SCOPE_ENV, None)
        else:
            os.environ[SCOPE_ENV] = previous
        stop_server(state)
