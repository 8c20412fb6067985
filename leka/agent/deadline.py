"""Deadlines that hold inside a step: the per-step limit, the per-task wall clock and the budget's minutes.

A step's IR work in this process (the proposer's rewrites and schedule rules, parsing TVMScript,
validating, flattening) runs in a forked child (``run_forked``) that is killed, with its whole process
group, when the step's deadline passes: TVM calls cannot be interrupted in a thread. Fork (not spawn)
because the child needs the live proposer, task and history objects, and costs milliseconds. Before the
kill the child's Python stacks are dumped (faulthandler, from a signal handler, so it works while the
child sits inside a TVM call), which names the rule that overran. A measurement runs in a thread
(``call_bounded``); at the deadline the evaluator's worker is killed through the ``cancel`` hook, so the
blocked call returns, and the candidate is recorded as cut off.
"""
from __future__ import annotations

import faulthandler
import gc
import json
import os
import re
import select
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

# A step (propose, prepare and measure k candidates) that takes longer than this is cut off: a quarter of
# the task's wall clock, within [MIN_STEP_S, MAX_STEP_S]. Steps of the offline proposer take 3-40 s on
# this 2-core host (whole tasks up to 221 s at compiles=10); the runaway ones ran for over 10 minutes.
MIN_STEP_S, MAX_STEP_S = 30.0, 120.0
# Task wall clock when the budget has no minutes limit.
DEFAULT_TASK_S = 1800.0
# Time kept for finalize (fresh re-measurements) at the end of a task's wall clock.
FINALIZE_RESERVE_S = 60.0

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Limits:
    """Wall-clock bounds of one task's run. task_s None: the budget's minutes plus FINALIZE_RESERVE_S,
    else DEFAULT_TASK_S; step_s None: a quarter of the task's, within [MIN_STEP_S, MAX_STEP_S]."""

    step_s: float | None = None
    task_s: float | None = None
    min_step_s: float | None = None  # a slow model's calls must fit a step (session.sized_for_model); not with step_s

    def __post_init__(self) -> None:
        for name, value in (("step limit", self.step_s), ("task limit", self.task_s)):
            if value is not None and not value > 0:
                from leka.errors import LekaError

                raise LekaError(f"{name} must be > 0 seconds, got {value}")

    def task_seconds(self, budget_minutes: float | None) -> float:
        if self.task_s is not None:
            return float(self.task_s)
        return budget_minutes * 60.0 + FINALIZE_RESERVE_S if budget_minutes is not None else DEFAULT_TASK_S

    def step_seconds(self, task_s: float) -> float:
        if self.step_s is not None:
            return float(self.step_s)
        return max(min(max(task_s / 4, MIN_STEP_S), MAX_STEP_S), self.min_step_s or 0.0)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _minutes_left_s(budget: Any) -> float | None:
    remaining = getattr(budget, "remaining", None)
    left = remaining().get("minutes") if remaining is not None else None
    return None if left is None else float(left) * 60.0


class RunClock:
    """The deadlines of one run (started when the run starts or resumes, like the budget's wall time)."""

    def __init__(self, limits: Limits, budget: Any = None, clock: Callable[[], float] = time.monotonic):
        self.limits, self.budget, self.clock = limits, budget, clock
        self.started = clock()
        minutes = getattr(budget, "limits", {}).get("minutes") if budget is not None else None
        self.task_s = limits.task_seconds(minutes)
        self.step_s = limits.step_seconds(self.task_s)
        self.reserve_s = min(FINALIZE_RESERVE_S, self.task_s / 4)

    def elapsed(self) -> float:
        return self.clock() - self.started

    def search_over(self) -> str | None:
        """Why the search must stop now (task wall clock less the finalize reserve), else None."""
        if self.elapsed() >= self.task_s - self.reserve_s:
            return f"task wall-clock limit: {self.task_s:.0f} s (less {self.reserve_s:.0f} s kept for finalize)"
        return None

    def step_deadline(self) -> tuple[float, str]:
        """(absolute deadline, what sets it) for a step starting now: the nearest of the step limit, the
        search end of the task wall clock and the budget's minutes."""
        now = self.clock()
        options = [(now + self.step_s, f"step limit {self.step_s:g} s"),
                   (self.started + self.task_s - self.reserve_s, f"task limit {self.task_s:.0f} s")]
        left = _minutes_left_s(self.budget)
        if left is not None:
            options.append((now + left, "budget minutes"))
        return min(options)

    def finalize_deadline(self) -> float:
        """Finalize may use the rest of the task wall clock, and at least the reserve."""
        return max(self.started + self.task_s, self.clock() + self.reserve_s)


@dataclass
class Bounded:
    """What a bounded piece of work produced before it ended or was cut off."""

    messages: list[dict[str, Any]]
    cut_off: str | None  # "algorithm rewrite alg.X (parsing TVMScript)"-style account of where it was
    elapsed_s: float
    cut_off_rule: str | None = None  # the offline rule (NAME) the child was inside, when known
    forked: bool = False  # ran in a child: what it spent must be brought home (its "spent" messages)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("kind") == kind]


def run_inline(work: Callable[[Emit], None]) -> Bounded:
    """The same contract as run_forked, in this process and without a deadline (tests' fakes, no limits)."""
    t0 = time.monotonic()
    messages: list[dict[str, Any]] = []
    try:
        work(messages.append)
    except Exception as e:  # as the forked child reports it
        messages.append(_raised(e))
    return Bounded(messages, None, time.monotonic() - t0)


def _raised(e: BaseException) -> dict[str, Any]:
    return {"kind": "raised", "type": type(e).__name__, "message": str(e), "module": type(e).__module__}


def run_forked(work: Callable[[Emit], None], deadline: float, grace_s: float = 0.5) -> Bounded:
    """Run work(emit) in a forked child until it returns or `deadline` (time.monotonic) passes.

    emit(msg) sends one JSON-able message to the parent as it happens, so whatever was done before a
    cut-off is kept. An exception in the child arrives as {"kind": "raised", "type", "message"}.
    """
    t0 = time.monotonic()
    rfd, wfd = os.pipe()
    dump = tempfile.TemporaryFile(prefix="leka-step-")
    # SQLite is not fork-safe: a garbage Connection inherited from this process (LangGraph's checkpointer, the
    # stores), finalised by the child's collector, waits forever on SQLite's mutex if a thread here held it at
    # the fork (seen: `leka remote ingest` steps stuck in sqlite3_free until their limit cut them off). What
    # exists at the fork is frozen, so the child's collector never visits it; this process unfreezes at once.
    pid = -1
    gc.freeze()
    try:
        pid = os.fork()
        if pid == 0:  # child: never returns
            _child(work, rfd, wfd, dump)
    finally:
        if pid != 0:  # this process (also when fork failed): collect as before
            gc.unfreeze()
    os.close(wfd)
    messages: list[dict[str, Any]] = []
    buf = b""
    ended = False
    try:
        while not ended:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([rfd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                ended = True
            buf += chunk
            *lines, buf = buf.split(b"\n")
            messages += [json.loads(line) for line in lines if line]
        cut_off, rule = (None, None) if ended else _where(messages, _stacks(pid, dump, grace_s))
    finally:
        _reap(pid)
        os.close(rfd)
        dump.close()
    return Bounded(messages, cut_off, time.monotonic() - t0, rule, forked=True)


def mirror_spending(budget: Any, emit: Emit) -> None:
    """In a forked child: every charge and settle of `budget` is also sent to the parent the moment it
    happens, so a step that fails or is cut off after a model call still pays for it there (the child's
    copy of the accountant dies with it). The parent settles each {"kind": "spent"} message."""
    if budget is None:
        return
    for name in ("charge", "settle"):
        spend = getattr(budget, name)

        def mirrored(kind: str, amount: float = 1, _spend: Callable[..., None] = spend) -> None:
            _spend(kind, amount)
            emit({"kind": "spent", "what": kind, "amount": amount})
        setattr(budget, name, mirrored)


def _child(work: Callable[[Emit], None], rfd: int, wfd: int, dump: Any) -> None:
    code = 0
    try:
        os.close(rfd)
        os.setpgid(0, 0)  # own process group: subprocesses it starts (leka.ir.isolated) die with it
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False, chain=False)
        out = os.fdopen(wfd, "wb", buffering=0)

        def emit(msg: dict[str, Any]) -> None:
            out.write(json.dumps(msg, default=str).encode() + b"\n")
        try:
            work(emit)
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which decides
            emit(_raised(e))
    except BaseException:  # noqa: BLE001 - the pipe is gone: nothing left to tell
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flushing of state shared with the parent


def _stacks(pid: int, dump: Any, grace_s: float) -> str:
    """The child's Python stack (innermost first), dumped from its SIGUSR1 handler."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return ""
    end = time.monotonic() + grace_s
    text, last = "", None
    while time.monotonic() < end and (not text or text != last):  # until the dump stops growing
        time.sleep(0.05)
        dump.seek(0)
        last, text = text, dump.read().decode(errors="replace")
    return text


def _reap(pid: int) -> None:
    for sig in (signal.SIGKILL,):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


_FRAME = re.compile(r'File "([^"]+)", line \d+ in (\S+)')
_RULE_FILE = re.compile(r"leka/proposers/offline/(algorithm|rules|memory)/(\w+)\.py$")
_RULE_KIND = {"algorithm": "algorithm rewrite", "rules": "schedule rule", "memory": "memory rule"}
# Where in TVM (or around it) the innermost frames were, as the cut-off reason names it.
_ACTIVITIES = (("tvm/script/parser", "parsing TVMScript"), ("tvm/script/printer", "printing TVMScript"),
               ("tvm/s_tir/schedule", "TVM schedule primitive"), ("leka/ir/live.py", "schedule application"),
               ("leka/ir/checks.py", "validation"), ("leka/ir/isolated.py", "algorithm worker"),
               ("subprocess.py", "algorithm worker"))


def _rule_of_file(path: str) -> tuple[str, str] | None:
    """(kind, NAME) of the offline rule module at `path`, e.g. ("algorithm rewrite", "alg.fuse_elementwise")."""
    m = _RULE_FILE.search(path)
    if not m or m.group(2) in ("common", "__init__"):
        return None
    mod = next((mod for mod in list(sys.modules.values()) if getattr(mod, "__file__", None) == path), None)
    return _RULE_KIND[m.group(1)], str(getattr(mod, "NAME", None) or m.group(2))


def _where(messages: list[dict[str, Any]], stacks: str) -> tuple[str, str | None]:
    """(one line: the child's last reported phase, the rule it was in and the TVM activity; the rule's
    NAME or None). Frames are listed innermost first."""
    phase = next((m["what"] for m in reversed(messages) if m.get("kind") == "phase"), "the step")
    files = [f for f, _ in _FRAME.findall(stacks)]
    rule = next((r for r in map(_rule_of_file, files) if r), None)
    activity = next((label for f in files for key, label in _ACTIVITIES if key in f), None)
    text = phase + (f": {rule[0]} {rule[1]}" if rule and rule[1] not in phase else "")
    return text + (f" ({activity})" if activity else ""), (rule[1] if rule else None)


def call_bounded(fn: Callable[[Any], Any], arg: Any, deadline: float,
                 cancel: Callable[[], None] | None = None) -> tuple[bool, Any]:
    """(finished, fn(arg)) with fn run in a thread until `deadline`; an exception is re-raised here.
    At the deadline `cancel()` (e.g. killing the evaluator's worker) makes the blocked call return; the
    thread is then abandoned (daemon), and (False, None) comes back."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(arg)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e
    th = threading.Thread(target=run, name="leka-bounded", daemon=True)
    th.start()
    th.join(max(deadline - time.monotonic(), 0.0))
    if th.is_alive():
        if cancel is not None:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - best effort: the thread is abandoned either way
                pass
            th.join(2.0)
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")
