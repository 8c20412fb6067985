"""The worker's sandbox (leka.evaluator.sandbox), tried from inside with small Python payloads run by the same
launcher the evaluator uses: unprivileged, no network, nothing writable but a private /tmp, no secrets in the
environment, nothing left running after a sweep, a fork bomb bounded. Then the evaluator's worker itself: a
reply that is not a frame (a pickle) is a crash of that candidate, never unpickled."""
from __future__ import annotations

import json
import os
import pickle
import socket
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from leka.evaluator import EvalConfig, Evaluator
from leka.evaluator import sandbox as sb
from leka.evaluator import sandbox_plan as sp
from leka.evaluator.pool import Worker, WorkerFault
from leka.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sb.disabled(), reason="LEKA_SANDBOX=off")


class Run:
    """One payload in the sandbox; its stdout/stderr collected in a file."""

    def __init__(self, code: str, limits: sb.Limits | None = None, how: sb.Plan | None = None,
                 python: str = sys.executable):
        self.log = tempfile.NamedTemporaryFile(prefix="leka-sbx-test-", delete=False).name
        fd = os.open(self.log, os.O_WRONLY)
        try:
            self.box = sb.Sandbox([python, "-c", textwrap.dedent(code)], env=sb.worker_env({}),
                                  limits=limits or sb.Limits(mem_gb=4), log_fd=fd, cwd=str(ROOT), how=how)
        finally:
            os.close(fd)

    def output(self, timeout: float = 60) -> str:
        try:
            self.box.proc.wait(timeout=timeout)
        finally:
            self.box.kill()
        return Path(self.log).read_text()

    def wait_for(self, text: str, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            out = Path(self.log).read_text()
            if text in out:
                return out
            time.sleep(0.05)
        raise AssertionError(f"payload never printed {text!r}: {Path(self.log).read_text()[-500:]}")

    def close(self) -> None:
        self.box.kill()
        os.unlink(self.log)


PROBE = """
import json, os, socket
out = {"uid": os.getuid(), "gid": os.getgid(), "env": sorted(os.environ), "pid": os.getpid()}
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", PORT))
    out["net"] = "connected"
except OSError as e:
    out["net"] = type(e).__name__
writes = {}
for path in ("WORKDIR/leka-sandbox-escape", "/etc/leka-sandbox-escape", "/tmp/inside"):
    try:
        with open(path, "w") as f:
            f.write("x")
        writes[path] = "written"
    except OSError as e:
        writes[path] = type(e).__name__
out["writes"] = writes
out["root"] = sorted(os.listdir("/root")) if os.path.isdir("/root") else None
print(json.dumps(out), flush=True)
"""


def test_inside_is_nobody_offline_read_only_and_without_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("LEKA_TEST_API_KEY", "sk-secret")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    work = tmp_path / "work"
    work.mkdir()
    run = Run(PROBE.replace("PORT", str(port)).replace("WORKDIR", str(work)))
    try:
        got = json.loads(run.output().strip().splitlines()[-1])
    finally:
        run.close()
        listener.close()
    assert got["uid"] == got["gid"] == 65534
    assert got["pid"] == 2  # its own pid namespace: nothing outside is visible
    assert got["net"] in ("ConnectionRefusedError", "OSError", "TimeoutError")  # even 127.0.0.1
    assert got["writes"][f"{work}/leka-sandbox-escape"] != "written"
    assert got["writes"]["/etc/leka-sandbox-escape"] != "written"
    assert got["writes"]["/tmp/inside"] == "written"
    assert not (work / "leka-sandbox-escape").exists()
    assert "LEKA_TEST_API_KEY" not in got["env"]
    assert got["root"] is None or set(got["root"]) <= {".pyenv"}  # root's home hidden but the interpreter


SPAWN = """
import os, subprocess, time
child = subprocess.Popen(["sleep", "300"], start_new_session=True)
print("spawned", child.pid, flush=True)
time.sleep(300)
"""


def test_sweep_kills_what_the_worker_spawned_and_kill_ends_everything():
    run = Run(SPAWN)
    try:
        run.wait_for("spawned")
        inside = run.box.pids()
        assert sorted(inside.values()) == [1, 2, 3]  # bwrap's init, the payload, its child
        assert run.box.sweep() >= 1
        assert sorted(run.box.pids().values()) == [1, 2] and run.box.alive
        run.box.kill()
        assert run.box.pids() == {} and not run.box.alive
    finally:
        run.close()


FORK_BOMB = """
import os, time
n = 0
while n < 5000:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    n += 1
print("forked", n, flush=True)
time.sleep(120)
"""


def _fork_bomb(how: sb.Plan | None, python: str) -> None:
    run = Run(FORK_BOMB, limits=sb.Limits(mem_gb=4, nproc=48), how=how, python=python)
    try:
        out = run.wait_for("forked", timeout=60)
        forked = int(out.split("forked", 1)[1].split()[0])
        assert 0 < forked < 48, out
        run.box.kill()
        assert run.box.pids() == {}
    finally:
        run.close()


@pytest.mark.skipif(not sb.PidsCgroup.usable(), reason="no writable pids cgroup here")
@pytest.mark.parametrize("privileged", [True, False], ids=["setpriv-inside", "user-namespace"])
def test_fork_bomb_is_bounded_by_the_pids_cgroup(privileged):
    if privileged and not sb.plan().privileged:
        pytest.skip("bwrap cannot run privileged here")
    _fork_bomb(sb.Plan(None, sb.plan().root_paths, "cgroup", privileged=privileged), sys.executable)


def test_files_only_root_may_read_stay_unread():
    how = sb.plan()
    if os.geteuid() != 0 or (how.outer_uid is None and not how.privileged):
        pytest.skip("the sandbox is root outside here (no CAP_SYS_ADMIN, interpreter readable by root only)")
    fd, secret = tempfile.mkstemp(prefix="leka-secret-", dir="/var/tmp")
    os.write(fd, b"sk-secret")
    os.close(fd)
    os.chmod(secret, 0o600)
    run = Run(f"""
        try:
            print("read", open({secret!r}).read(), flush=True)
        except OSError as e:
            print("denied", type(e).__name__, flush=True)
    """)
    try:
        out = run.output()
    finally:
        run.close()
        os.unlink(secret)
    assert "denied PermissionError" in out and "sk-secret" not in out


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="needs root and a system python")
@pytest.mark.skipif(not all(sp._world_readable(p) for p in sb.needed_paths() if not p.startswith("/root/")),
                    reason="the checkout is closed to other users (e.g. under mktemp -d): plan() never picks an "
                           "unprivileged outside uid then")
def test_fork_bomb_is_bounded_by_rlimit_nproc_as_an_unprivileged_outside_uid():
    # As root with an interpreter any user can read (CI images), bwrap runs as an unprivileged uid and
    # RLIMIT_NPROC counts the sandbox's processes alone.
    _fork_bomb(sb.Plan(sp._OUTER_UID_BASE + os.getpid() % 50_000, (), "rlimit"), "/usr/bin/python3")


def test_priority_is_raised_from_outside_and_restored():
    if os.geteuid() != 0:
        pytest.skip("raising priority needs root here")
    run = Run("import time; print('up', flush=True); time.sleep(60)")
    try:
        run.wait_for("up")
        pid = run.box.worker_pid()
        assert pid is not None
        with run.box.priority(-5):
            assert os.getpriority(os.PRIO_PROCESS, pid) == -5
        assert os.getpriority(os.PRIO_PROCESS, pid) == 0
    finally:
        run.close()


def test_missing_bwrap_is_a_one_line_error(monkeypatch):
    real = sp.shutil.which
    monkeypatch.setattr(sp.shutil, "which", lambda name: None if name == "bwrap" else real(name))
    with pytest.raises(sb.SandboxError, match="apt-get install bubblewrap"):
        Run("print(1)")


def test_opt_out_is_recorded(monkeypatch):
    monkeypatch.setenv("LEKA_SANDBOX", "off")
    assert sb.isolation() == "none (LEKA_SANDBOX=off)"
    assert Worker().isolation == "none (LEKA_SANDBOX=off)"


class PickleWorker(Worker):
    """A worker that answers with a pickle whose unpickling would create a marker file."""

    marker = Path(tempfile.gettempdir()) / f"leka-unpickled-{os.getpid()}"

    def command(self, fd_in: int, fd_out: int) -> list[str]:
        class Boom:
            def __reduce__(self):
                return (os.system, (f"touch {PickleWorker.marker}",))

        payload = pickle.dumps({"ok": True, "boom": Boom()})
        code = f"import os, time; os.read({fd_in}, 1); os.write({fd_out}, {payload!r}); time.sleep(30)"
        return [sys.executable, "-c", code]


def test_a_pickled_reply_is_a_crash_and_never_unpickled():
    w = PickleWorker()
    try:
        w.start()
        with pytest.raises(WorkerFault) as err:
            w.request({"op": "ping"}, 20)
        assert err.value.kind == "crash" and "malformed reply" in str(err.value)
        assert not PickleWorker.marker.exists()
    finally:
        w.close()


def test_evaluations_leave_only_the_worker_running():
    task = get_task("ex-softmax-512x384")
    source = (ROOT / "tests" / "corpus" / "correct_naive.py").read_text()
    with Evaluator("host-cpu", EvalConfig(trials=1, measure=False)) as ev:
        assert ev.worker.request({"op": "ping"}, 60)["pid"] == 2
        res = ev.evaluate(task, source)
        assert res.correct, res.error
        assert res.detail["sandbox"].startswith("bwrap")
        assert sorted(ev.worker._sandbox.pids().values()) == [1, 2]
        box = ev.worker._sandbox
    assert box.pids() == {} and not box.alive  # closing the evaluator ends the namespace


class EagerWorker(Worker):
    """A worker that answers ping correctly, then sends a second, unrequested reply (a stale timing reply)."""

    def command(self, fd_in: int, fd_out: int) -> list[str]:
        code = (f"import os, time, numpy; from leka.evaluator.wire import read_frame, write_frame\n"
                f"read_frame({fd_in}); write_frame({fd_out}, {{'ok': True, 'pid': 2}})\n"
                f"write_frame({fd_out}, {{'ok': True, 'candidate_s': [1e-9]}}); time.sleep(30)")
        return [sys.executable, "-c", code]


def test_a_reply_sent_ahead_of_its_request_is_a_crash():
    w = EagerWorker()
    try:
        assert w.request({"op": "ping"}, 30)["ok"]
        time.sleep(0.5)
        with pytest.raises(WorkerFault, match="no request asked for"):
            w.request({"op": "time"}, 30)
    finally:
        w.close()


def test_a_checkout_under_tmp_stays_visible_inside(monkeypatch, tmp_path):
    """The sandbox's private /tmp must not hide a working directory (or a clone and its venv) under /tmp."""
    assert sb.under_tmp(["/tmp/a/clone", "/tmp/a/clone/.venv", "/usr", "/tmp/b"]) == ["/tmp/a/clone", "/tmp/b"]
    private = tmp_path / "private"  # like mktemp -d: closed to everyone but root
    private.mkdir(mode=0o700)
    work = private / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = sb._bwrap_argv(sb.plan(), 99, str(work), 100)
    assert ["--perms", "0755", "--dir", str(private)] == argv[argv.index(str(private)) - 3:argv.index(str(private)) + 1]
    task = get_task("ex-matmul-256")
    source = (Path(__file__).resolve().parents[1] / "examples" / "host-cpu" / "matmul.py").read_text()
    with Evaluator("host-cpu", EvalConfig(measure=False)) as ev:
        res = ev.evaluate(task, source)
    assert res.correct, res.error
