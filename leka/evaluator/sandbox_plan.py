"""How this machine sandboxes the worker (see sandbox.py for the sandbox itself): the Plan, the pids cgroup
that bounds its processes, and the bubblewrap command line.

Outside uid (``plan()``), as root (CI containers): when the interpreter is readable by any user, bwrap is
started through ``setpriv`` as an unprivileged uid and makes a user namespace, so the sandbox is nobody
outside too. When only root can read the interpreter (pyenv under /root) and root holds CAP_SYS_ADMIN,
bwrap runs privileged (mounts as root, no user namespace) and the command drops to uid 65534 with
``setpriv`` inside; /root is covered by a tmpfs with the interpreter bound back. Only without either is the
sandbox root outside (a user namespace: no capabilities, but root's file permissions). Processes are
bounded by a pids cgroup where one is writable, else RLIMIT_NPROC (which the kernel does not apply to root).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass

from leka.errors import LekaError

SANDBOX_UID = 65534  # nobody/nogroup inside the namespace
_OUTER_UID_BASE = 200_000  # unprivileged uids outside, one per evaluating process (RLIMIT_NPROC counts by it)


class SandboxError(LekaError):
    """The sandbox cannot be set up on this machine."""


def disabled() -> bool:
    return os.environ.get("LEKA_SANDBOX", "").lower() in ("off", "0", "no", "false")


def _world_readable(path: str) -> bool:
    """Whether any user can reach `path`: it and every ancestor searchable by others."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        try:
            if not os.stat(os.sep.join(parts[:i])).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def needed_paths() -> list[str]:
    """What the worker must read: the interpreter's installation, the environment, this package."""
    import leka

    return sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix,
                                                 os.path.dirname(os.path.dirname(leka.__file__)))})


def under_tmp(paths: list[str]) -> list[str]:
    """Those of `paths` that the sandbox's private /tmp would hide, outermost first, without nested ones."""
    out: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths}):
        if path.startswith("/tmp/") and not any(path.startswith(o + "/") for o in out):
            out.append(path)
    return out


class PidsCgroup:
    """A pids cgroup (v1 hierarchy) holding the whole sandbox: bounds its processes, lists them for the kill."""

    ROOT = "/sys/fs/cgroup/pids"
    _made = 0

    def __init__(self, limit: int):
        self._remove_stale()
        PidsCgroup._made += 1
        self.path = os.path.join(self.ROOT, f"leka-{os.getpid()}-{PidsCgroup._made}")
        os.mkdir(self.path)
        with open(os.path.join(self.path, "pids.max"), "w") as f:
            f.write(str(limit))

    @classmethod
    def _remove_stale(cls) -> None:
        """Empty cgroups of evaluating processes that died without cleaning up (killed runs)."""
        for name in os.listdir(cls.ROOT):
            parts = name.split("-")
            owner_gone = len(parts) == 3 and parts[1].isdigit() and not os.path.exists(f"/proc/{parts[1]}")
            if parts[0] == "leka" and owner_gone:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(cls.ROOT, name))

    @classmethod
    def usable(cls) -> bool:
        return os.geteuid() == 0 and os.access(cls.ROOT, os.W_OK) and os.path.exists(f"{cls.ROOT}/cgroup.procs")

    def join(self) -> None:  # preexec: the child enters before exec, so all its descendants are inside
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def pids(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def remove(self) -> None:
        for _ in range(200):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:  # busy until the killed processes are reaped
                time.sleep(0.01)


def _has_cap_sys_admin() -> bool:
    try:
        with open("/proc/self/status") as f:
            eff = next(ln for ln in f if ln.startswith("CapEff:"))
        return bool(int(eff.split()[1], 16) >> 21 & 1)  # CAP_SYS_ADMIN
    except (OSError, StopIteration, ValueError):
        return False


@dataclass(frozen=True)
class Plan:
    """How this machine sandboxes: who the sandbox is outside, and what bounds its process count."""

    outer_uid: int | None  # setpriv to this uid before bwrap (bwrap then makes a user namespace)
    root_paths: tuple[str, ...]  # root-only paths bound back over a tmpfs /root
    nproc: str  # "cgroup" | "rlimit" | "none"
    privileged: bool = False  # bwrap as root without a user namespace, setpriv to 65534 inside

    def describe(self) -> str:
        if self.privileged:
            who = f"uid {SANDBOX_UID} outside too, no capabilities"
        elif self.outer_uid is not None:
            who = f"uid {SANDBOX_UID}, outside uid {self.outer_uid}"
        else:
            who = f"uid {SANDBOX_UID}, outside uid {os.geteuid()} without capabilities"
        return f"bwrap ({who}; no network; read-only root, private /tmp; process bound: {self.nproc})"


def plan() -> Plan:
    """The strongest setup this machine allows (see the module doc)."""
    root = os.geteuid() == 0
    private = tuple(p for p in needed_paths() if not _world_readable(p))
    nproc = "cgroup" if PidsCgroup.usable() else "rlimit"
    if root and not private:
        return Plan(_OUTER_UID_BASE + os.getpid() % 50_000, (), nproc)
    hidden = tuple(p for p in private if p.startswith("/root/")) if root else ()
    if root and _has_cap_sys_admin() and shutil.which("setpriv"):
        return Plan(None, hidden, nproc, privileged=True)
    return Plan(None, hidden, "none" if root and nproc == "rlimit" else nproc)


def isolation() -> str:
    """What results record about the worker's isolation."""
    return "none (LEKA_SANDBOX=off)" if disabled() else plan().describe()


def _bwrap_argv(p: Plan, info_fd: int, cwd: str, tmp_mb: int) -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap (bwrap) not found: apt-get install bubblewrap "
                           "(or LEKA_SANDBOX=off to evaluate without a sandbox, recorded in every result)")
    setpriv = shutil.which("setpriv")
    if (p.outer_uid is not None or p.privileged) and setpriv is None:
        raise SandboxError("setpriv not found (apt-get install util-linux): it drops root for the sandbox")
    argv: list[str] = []
    if p.outer_uid is not None:
        assert setpriv is not None  # refused above without one
        argv = [setpriv, f"--reuid={p.outer_uid}", f"--regid={p.outer_uid}", "--clear-groups"]
    argv.append(bwrap)
    if p.privileged:  # mounts made as root, then the command drops to nobody (setpriv, below)
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                 "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    argv += ["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--perms", "1777", "--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    if p.root_paths:  # root's home stays hidden but for what the worker runs from
        argv += ["--tmpfs", "/root"]
        for path in p.root_paths:
            argv += ["--ro-bind", path, path]
    for path in under_tmp([*needed_paths(), cwd]):  # a checkout under /tmp stays visible (read-only)
        # bwrap would make the missing parents with the source's modes (mktemp -d: 0700, closed to nobody)
        parents = [os.path.dirname(path)]
        while parents[-1] != "/tmp":
            parents.append(os.path.dirname(parents[-1]))
        for parent in reversed(parents[:-1]):
            argv += ["--perms", "0755", "--dir", parent]
        argv += ["--ro-bind", path, path]
    for dev in sorted(os.listdir("/dev")):  # GPUs stay usable inside (CUDA runner)
        if dev.startswith("nvidia"):
            argv += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    return argv + ["--chdir", cwd, "--info-fd", str(info_fd)]


def _inner_prefix(p: Plan) -> list[str]:
    """What runs inside before the command: in the privileged setup, the drop to nobody."""
    if not p.privileged:
        return []
    return [str(shutil.which("setpriv")), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all"]
