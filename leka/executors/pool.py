"""The pool executor: jobs in worker processes of this machine, up to `processes` at a time, each in a fresh
process (spawn: TVM's thread pools do not survive fork; a job's imports, threads and evaluator worker end with
it). `leka optimize` tunes its kernels through it unless `--executor` names another (`--jobs` processes).

Each child sends PLACED (`where("local")`, its pid included), the job's own events and then its value or error
through one pipe, so events arrive in order and before their job's outcome. A job that raises, or whose process
dies before it answers (killed, `os._exit`, a crash in native code), comes back as `JobDone(error=...)`; the others
go on. When the driver stops early (Ctrl-C, an exception, the outcomes no longer read), the running children are
terminated (SIGTERM, so a job unwinds and closes its evaluator; SIGKILL after a grace period) and the queued ones
never start. `Job.timed` and `Job.gpu` are not enforced here: the caller chose how many run at once."""
from __future__ import annotations

import multiprocessing as mp
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Generator, Iterable, Iterator

from .base import PLACED, EventSink, Job, JobContext, JobDone, JobFn, SampleOutcome, SampleSpec, run_samples, where

STOP_GRACE_S = 10.0  # a terminated child that has not exited by then is killed
EXIT_GRACE_S = 30.0  # a child that answered but has not exited by then is terminated (its slot is needed)


def _child(fn: JobFn, payload: Any, key: str, conn: Any) -> None:
    """Body of one worker process: says where it runs, runs the job, sends its value or error."""
    from leka.errors import error_line

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # terminated by the driver: unwind, close evaluators
    lock = threading.Lock()  # a job may report from its own threads

    def send(msg: tuple) -> None:
        with lock:
            conn.send(msg)

    placed = where("local")
    send(("event", (key, PLACED, placed)))
    try:
        out: tuple = ("value", fn(payload, JobContext(key, placed, lambda item: send(("event", item)))))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the driver reports it, not each child
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - a job that raises fails alone
        out = ("error", error_line(e))
    try:
        send(out)
    except Exception as e:  # noqa: BLE001 - a value that cannot be pickled
        send(("error", f"the job's value could not be sent back: {error_line(e)}"))
    conn.close()


@dataclass
class _Running:
    job: Job
    proc: Any
    conn: Any
    placed: dict[str, Any] | None = None  # where it runs, from its PLACED event
    answered: float | None = None  # when its value or error arrived (monotonic)


class PoolExecutor:
    name = "local"

    def __init__(self, processes: int = 1) -> None:
        self.processes = max(1, int(processes))

    def run_jobs(self, fn: JobFn, jobs: Iterable[Job], on_event: EventSink | None = None) -> Generator[JobDone, None, None]:
        ctx = mp.get_context("spawn")
        queued, running = list(jobs), list[_Running]()
        try:
            while queued or running:
                while queued and len(running) < self.processes:
                    running.append(_start(ctx, fn, queued.pop(0)))
                wait([r.conn for r in running if r.answered is None] + [r.proc.sentinel for r in running],
                     timeout=1.0)
                for r in list(running):
                    alive = r.proc.is_alive()  # before reading: what a dead child sent is all in the pipe
                    done = _read(r, on_event)
                    if done is not None:
                        yield done
                    if not alive:
                        r.proc.join()
                        running.remove(r)
                        if r.answered is None:  # died before it answered: whatever it sent is read by now
                            yield JobDone(r.job, error=f"worker process died (exit code {r.proc.exitcode})",
                                          where=r.placed)
                    elif r.answered is not None and time.monotonic() - r.answered > EXIT_GRACE_S:
                        r.proc.terminate()
        finally:  # stopped early, or done: nothing outlives the call
            _stop([r.proc for r in running])

    def run(self, specs: Iterable[SampleSpec], on_event: EventSink | None = None) -> Iterator[SampleOutcome]:
        return run_samples(self, specs, on_event)

    def close(self) -> None:
        pass


def _start(ctx: Any, fn: JobFn, job: Job) -> _Running:
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, job.payload, job.key, writer))
    proc.start()
    writer.close()  # the child holds the only writer: its exit is an EOF here
    return _Running(job, proc, reader)


def _read(r: _Running, on_event: EventSink | None) -> JobDone | None:
    """Every message a child has sent so far: events go to on_event; its outcome, if it came, is returned."""
    out = None
    while r.answered is None:
        try:
            if not r.conn.poll(0):
                return out
            kind, body = r.conn.recv()
        except (EOFError, OSError):
            return out
        if kind == "event":
            if body[1] == PLACED and body[0] == r.job.key:
                r.placed = body[2]
            if on_event is not None:
                on_event(*body)
            continue
        r.answered = time.monotonic()
        out = JobDone(r.job, body, where=r.placed) if kind == "value" else JobDone(r.job, error=body, where=r.placed)
    return out


def _stop(procs: list[Any]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
