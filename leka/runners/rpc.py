"""Remote devices behind a TVM RPC tracker: a board runs `python -m tvm.exec.rpc_server --tracker HOST:PORT
--key KEY` with TVM's runtime alone; kernels are built here, uploaded as an exported library, run and timed
there by TVM's time_evaluator, and their outputs fetched for the check here (docs/targets.md, "Board farms").

    spec = RPCSpec.parse("127.0.0.1:9190:rpi4")
    sess = connect(spec)                        # RPCError (one line) when the tracker or the key is not there
    loaded = RPCLoaded(sess, lib_bytes, ".so", entry, params, family, timing_lib)
    loaded.upload(arrays); loaded.run(); loaded.download(); loaded.arm(outputs); loaded.time(number)

Timed runs follow the poison and a fresh input mix, as on the local runners, although a stock rpc_server
has none of our functions: leka.runners.rpc_timing uploads a compiled mix and a timed wrapper next to the
kernel (docs/evaluator.md, "Remote devices").
"""
from __future__ import annotations

import gc
import hashlib
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from leka.errors import LekaError, error_line

from .base import check_arrays


class RPCError(LekaError):
    """The tracker, the key or the remote session is not usable."""


@dataclass(frozen=True)
class RPCSpec:
    host: str
    port: int
    key: str

    @classmethod
    def parse(cls, text: str) -> "RPCSpec":
        host, sep1, rest = str(text).partition(":")
        port, sep2, key = rest.partition(":")
        if not (sep1 and sep2 and host and key and port.isdigit()):
            raise RPCError(f"--rpc {text!r}: expected TRACKER_HOST:PORT:KEY, e.g. 127.0.0.1:9190:rpi4")
        return cls(host, int(port), key)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}:{self.key}"


def tracker_keys(spec: RPCSpec, timeout_s: float = 5.0) -> dict[str, int]:
    """Free servers per key registered at the tracker; RPCError when nothing answers there."""
    from tvm import rpc

    try:
        socket.create_connection((spec.host, spec.port), timeout=timeout_s).close()
        summary = rpc.connect_tracker(spec.host, spec.port).summary()
    except Exception as e:  # noqa: BLE001 - refused, unreachable, not a tracker: one line
        raise RPCError(f"RPC tracker {spec.host}:{spec.port} does not answer ({error_line(e)})") from None
    free: dict[str, int] = {}
    for srv in summary.get("server_info", []):
        k = str(srv.get("key", "")).split(":")[-1]
        free[k] = free.get(k, 0) + 1
    return free


def check_farm(spec: RPCSpec | str) -> RPCSpec:
    """The spec, once the tracker answers and a server is registered under its key; else RPCError."""
    spec = spec if isinstance(spec, RPCSpec) else RPCSpec.parse(spec)
    keys = tracker_keys(spec)
    if spec.key not in keys:
        raise RPCError(f"no RPC server is registered under key {spec.key!r} at {spec.host}:{spec.port} "
                       f"(keys there: {', '.join(sorted(keys)) or 'none'})")
    return spec


def connect(spec: RPCSpec, session_timeout_s: float = 0) -> Any:
    """A session on a server registered under spec.key (the tracker queues us while all are busy)."""
    from tvm import rpc

    check_farm(spec)
    try:
        return rpc.connect_tracker(spec.host, spec.port).request(spec.key, priority=1,
                                                                 session_timeout=session_timeout_s, max_retry=2)
    except Exception as e:  # noqa: BLE001
        raise RPCError(f"RPC session for key {spec.key!r} failed: {error_line(e)}") from None



_SESSIONS: dict[RPCSpec, list] = {}  # spec -> [session, users]: one session per farm key in a process


def shared_session(spec: RPCSpec) -> Any:
    """This process's session for spec (opened on first use; release_session() when done): evaluators of one
    process share it, since the tracker hands a server to one session at a time and a second request would
    wait for the first to end."""
    if spec not in _SESSIONS:
        _SESSIONS[spec] = [connect(spec), 0]
    _SESSIONS[spec][1] += 1
    return _SESSIONS[spec][0]


def release_session(spec: RPCSpec, failed: bool = False) -> None:
    """One user less; the last one (or a failure: the next user asks the tracker again) closes it, so the
    server goes back to the tracker's pool."""
    entry = _SESSIONS.get(spec)
    if entry is not None:
        entry[1] -= 1
        if failed or entry[1] <= 0:
            del _SESSIONS[spec]
            gc.collect()  # whatever still refers to the session in a cycle: it closes now, not at some later GC


def remote_device(session: Any, family: str) -> Any:
    return {"cpu": session.cpu, "cuda": session.cuda, "opencl": session.cl}[family](0)


def upload_module(session: Any, lib: bytes, suffix: str) -> Any:
    """A library loaded on the remote device under a name of its own: rewriting a file the server has loaded
    crashes it in dlsym."""
    name = f"leka_{hashlib.sha1(lib).hexdigest()[:12]}_{uuid.uuid4().hex[:8]}{suffix}"
    session.upload(bytearray(lib), target=name)
    return session.load_module(name)


class RPCLoaded:
    """An exported library loaded on the remote device (runner interface of leka/runners/__init__.py).

    Timing, once armed, goes through leka.runners.rpc_timing: with `timing_lib` (the mix and the timed
    wrapper built for the board) the poison and fresh inputs come before every timed run, on the board;
    without them (GPU boards) this process writes them before each round of `number` runs."""

    def __init__(self, session: Any, lib: bytes, suffix: str, entry: str,
                 params: Sequence[tuple[str, Sequence[int], str]], family: str,
                 timing_lib: bytes | None = None):
        self.session, self.suffix = session, suffix
        self.module = upload_module(session, lib, suffix)
        self.entry, self.func = entry, self.module[entry]
        self.params = [(n, tuple(int(d) for d in s), str(t)) for n, s, t in params]
        self.family, self.dev = family, remote_device(session, family)
        self.tensors: list[Any] = []
        self.timing_lib = timing_lib
        self.wrapper: Any = None  # rpc_timing.RemoteWrapper, loaded on the first arm
        self.preproc: Any = None  # rpc_timing.RemotePreproc while armed
        self.target: Any = None  # the build's target (name or JSON), set by rpc_evaluator for the timing library

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        import tvm

        self.tensors = [tvm.runtime.tensor(a, self.dev) for a in check_arrays(self.params, arrays)]
        self.preproc = None

    def run(self) -> None:
        self.func(*self.tensors)
        self.dev.sync()

    def download(self) -> list[np.ndarray]:
        self.dev.sync()
        return [t.numpy() for t in self.tensors]

    def arm(self, outputs: Sequence[int]) -> None:
        """Poison and fresh inputs before every later timed run (rpc_timing); untimed runs see the alternates."""
        from .rpc_timing import RemotePreproc, RemoteWrapper

        if self.wrapper is None and self.timing_lib is not None:
            self.wrapper = RemoteWrapper(self, self.timing_lib)
        self.preproc = RemotePreproc(self, outputs, self.wrapper)

    def time(self, number: int, final: bool = False) -> float:
        """Mean seconds per run of `number` runs timed on the board (TVM's time_evaluator); armed: each after
        the poison and a fresh input mix; `final`: after the uploaded inputs are restored (the checked run)."""
        if self.preproc is not None:
            return self.preproc.time(number, final)
        timer = self.module.time_evaluator(self.entry, self.dev, number=number, repeat=1)
        return float(timer(*self.tensors).mean)


def farm_path() -> Path:
    """The farm config: $LEKA_FARM, else farm.json in the .leka folder (LEKA_HOME overrides it)."""
    import os

    from leka.storage import leka_home

    return Path(os.environ.get("LEKA_FARM") or leka_home() / "farm.json")


def farm_rpc(target_name: str) -> str | None:
    """The tracker spec the farm config gives a preset: {"rpi4": "HOST:PORT:KEY", "jetson-nano": {"rpc": ...}}."""
    import json

    path = farm_path()
    if not path.exists():
        return None
    try:
        entry = json.loads(path.read_text()).get(target_name)
    except (OSError, ValueError, AttributeError) as e:
        raise RPCError(f"{path}: not a farm config ({e})") from None
    spec = entry.get("rpc") if isinstance(entry, dict) else entry
    if spec is not None:
        RPCSpec.parse(spec)  # a bad entry fails here, naming the spec
    return spec
