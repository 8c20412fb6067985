"""The worker's sandbox: bubblewrap (Debian's ``bwrap``) namespaces plus resource limits.

Inside: uid/gid 65534, no network (an empty network namespace: even 127.0.0.1 is refused), a read-only
root, a private size-bounded tmpfs on /tmp as the only writable place, its own pid namespace, a new
session, and only an allow-listed environment (no API keys). Limits: address space, CPU time, processes,
file size, no core dumps.

Who the sandbox is outside and what bounds its processes is this machine's ``plan()`` (sandbox_plan.py).
Nothing outlives an evaluation: ``sweep()`` kills every process of the sandbox's pid namespace except its
init and the worker, and ``kill()`` ends the namespace. The priority raise for timing is applied from
here (root) to the worker's threads, which need no privilege inside.

``LEKA_SANDBOX=off`` runs the worker unsandboxed (limits still set); results record it.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterator

from .sandbox_plan import (SANDBOX_UID, PidsCgroup, Plan, SandboxError, _bwrap_argv, _inner_prefix, disabled,
                           isolation, needed_paths, plan, under_tmp)

__all__ = ["SANDBOX_UID", "Limits", "PidsCgroup", "Plan", "Sandbox", "SandboxError", "disabled", "isolation",
           "needed_paths", "plan", "thread_priority", "timing_policy", "under_tmp", "worker_env"]

_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH", "TVM_BACKTRACE", "TVM_NUM_THREADS",
             "TVM_CUDA_COMPILE_MODE", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "OCL_ICD_VENDORS",
             "OCL_ICD_FILENAMES", "POCL_DEVICES", "POCL_MAX_PTHREAD_COUNT", "OMP_NUM_THREADS")


@dataclass(frozen=True)
class Limits:
    mem_gb: float = 8.0  # RLIMIT_AS of the worker
    nproc: int = 256  # processes + threads of the sandbox
    fsize_mb: int = 1024  # largest file the worker may write (its log included)
    tmp_mb: int = 2048  # size of the private /tmp
    cpu_s: int = 900  # CPU seconds at start; the worker lowers its soft limit to each request's budget


def timing_policy() -> str:
    """How timed requests are prioritised (``LEKA_TIMING_PRIORITY``: rr, the default; nice; off)."""
    value = os.environ.get("LEKA_TIMING_PRIORITY", "rr").lower()
    return value if value in ("rr", "nice", "off") else "rr"


@contextlib.contextmanager
def thread_priority(pid: int | None, nice: int = -10) -> Iterator[None]:
    """Every thread of process `pid` raised while the block runs, then put back. ``timing_policy()``: "rr"
    (the default) puts the threads in the real-time round-robin class at priority 1 — any normal process
    waits while they run, which keeps a parallel kernel's threads from being descheduled one at a time (at
    load 9-14 half the rounds of a 2-thread kernel took 50-100x longer with nice alone); round robin, not
    FIFO, so threads of one priority share a core; the kernel's RT throttling (sched_rt_runtime_us) still
    leaves normal processes 5 %. "nice" uses `nice` only, "off" nothing. Needs root or CAP_SYS_NICE; without
    it the block runs as it is."""
    policy = timing_policy()
    task_dir = f"/proc/{pid}/task"
    tids = [int(t) for t in os.listdir(task_dir)] if pid and os.path.isdir(task_dir) else []
    old: dict[int, tuple[int, Any, int]] = {}
    for tid in [] if policy == "off" else tids:
        try:
            old[tid] = (os.sched_getscheduler(tid), os.sched_getparam(tid), os.getpriority(os.PRIO_PROCESS, tid))
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            if policy == "rr":
                with contextlib.suppress(OSError):
                    os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(1))
        except OSError:
            pass
    try:
        yield
    finally:
        for tid, (sched, param, prio) in old.items():
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, sched, param)
                os.setpriority(os.PRIO_PROCESS, tid, prio)


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    """The worker's whole environment: allow-listed variables, this interpreter's import path, a private HOME."""
    import leka

    env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
    paths = [os.path.dirname(os.path.dirname(os.path.abspath(leka.__file__)))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths + [p for p in sys.path if p and os.path.isdir(p)]))
    env.update({"HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}, **extra)
    return env


def _set_limits(limits: Limits, cgroup: PidsCgroup | None) -> None:
    """preexec: runs in the child before exec, so setpriv, bwrap and the worker all carry the limits."""
    if cgroup is not None:
        cgroup.join()
    mem = int(limits.mem_gb * (1 << 30))
    fsize = limits.fsize_mb << 20
    settings = [(resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_FSIZE, fsize, fsize),
                (resource.RLIMIT_CPU, limits.cpu_s, resource.RLIM_INFINITY)]
    if mem > 0:
        settings.append((resource.RLIMIT_AS, mem, mem))
    if os.geteuid() == 0:  # as another user it would count all of that user's processes
        settings.append((resource.RLIMIT_NPROC, limits.nproc, limits.nproc))
    for res, soft, hard in settings:
        resource.setrlimit(res, (soft, hard))


def _ns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _inner_pid(pid: int) -> int | None:
    """The pid a live process has in its innermost pid namespace (NSpid's last field); None for a zombie."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                    return None
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


class Sandbox:
    """One sandboxed process tree: ``argv`` run under bwrap with the limits, the fds in ``pass_fds`` inherited."""

    def __init__(self, argv: list[str], *, env: dict[str, str], limits: Limits, log_fd: int,
                 pass_fds: tuple[int, ...] = (), cwd: str | None = None, how: Plan | None = None):
        self.sandboxed = not disabled()
        self.plan = (how or plan()) if self.sandboxed else None
        cwd = cwd or os.getcwd()
        prefix: list[str] = []
        info_r = info_w = -1
        self.cgroup = PidsCgroup(limits.nproc) if self.plan and self.plan.nproc == "cgroup" else None
        if self.plan is not None:
            info_r, info_w = os.pipe()
            prefix = _bwrap_argv(self.plan, info_w, cwd, limits.tmp_mb)
            prefix += ["--clearenv"] + [a for k, v in env.items() for a in ("--setenv", k, v)] + ["--"]
            prefix += _inner_prefix(self.plan)
        cgroup = self.cgroup
        self.proc = subprocess.Popen(prefix + argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
                                     pass_fds=tuple(pass_fds) + ((info_w,) if info_w >= 0 else ()),
                                     env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=lambda: _set_limits(limits, cgroup))
        self._ns: str | None = None
        self._init_pid: int | None = None
        if info_w >= 0:
            os.close(info_w)
            self._read_info(info_r)

    def _read_info(self, fd: int) -> None:
        """bwrap reports its namespace's init as {"child-pid": N} once the namespaces exist."""
        raw, deadline = b"", time.monotonic() + 30
        with os.fdopen(fd, "rb", buffering=0) as f:
            while self._init_pid is None and time.monotonic() < deadline:
                if not select.select([f], [], [], 0.5)[0]:
                    continue
                chunk = f.read(4096)
                if not chunk or len(raw) > 65536:
                    return  # bwrap failed to start: the worker's log says why
                raw += chunk
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    self._init_pid = int(json.loads(raw.decode())["child-pid"])
        if self._init_pid is not None:
            self._ns = _ns_of(self._init_pid)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def pids(self) -> dict[int, int]:
        """Outside pid -> inside pid of every process in the sandbox's pid namespace. Empty once the
        namespace's init is gone: the kernel then ends the namespace, and may give its inode number to a
        new one (another evaluator's sandbox), whose processes must never be taken for ours."""
        if self._ns is None or self._init_pid is None or _ns_of(self._init_pid) != self._ns:
            return {}
        found = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and _ns_of(int(name)) == self._ns:
                inner = _inner_pid(int(name))
                if inner is not None:
                    found[int(name)] = inner
        return found

    def worker_pid(self) -> int | None:
        """The outside pid of the sandboxed command (pid 2 inside: bwrap's init is pid 1)."""
        if not self.sandboxed:
            return self.proc.pid if self.alive else None
        return next((p for p, inner in self.pids().items() if inner == 2), None)

    def sweep(self, rounds: int = 100) -> int:
        """Kill every process of the namespace but init and the worker (what a candidate spawned).
        Repeats until none is left, since a process may fork while it is being killed. Returns the count."""
        killed = 0
        for _ in range(rounds):
            strays = [p for p, inner in self.pids().items() if inner > 2]
            if not strays:
                break
            for pid in strays:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            time.sleep(0.002)
        return killed

    def kill(self) -> None:
        """End the whole tree: the namespace's init (the kernel then kills all in it), bwrap, the cgroup."""
        members = set(self.pids())  # no process enters a namespace whose init is dead: these are all
        for pid in (self._init_pid, self.proc.pid):
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not self.sandboxed:  # no namespace: the process group stands for the tree
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        ns, self._ns = self._ns, None
        for _ in range(500):  # the kernel tears the namespace down asynchronously: wait until it is empty
            left = [p for p in members if ns is not None and _ns_of(p) == ns and _inner_pid(p) is not None]
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        if self.cgroup is not None:
            self.cgroup.remove()

    def priority(self, nice: int = -10) -> contextlib.AbstractContextManager[None]:
        """Raise the scheduling priority of every worker thread (TVM's pool included) while timing, so
        background work on a shared machine does not preempt the timed kernel (`thread_priority`)."""
        return thread_priority(self.worker_pid(), nice)
