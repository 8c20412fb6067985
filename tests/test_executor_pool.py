"""The pool executor (leka/executors/pool.py), what `leka optimize` tunes its kernels through by default: each job
in a fresh worker process, its events before its outcome, a job that raises or whose process dies failing alone,
and a driver that stops early leaving no worker behind."""
import os
import time

from leka.executors.base import PLACED, Job
from leka.executors.pool import PoolExecutor


def _job(x: float, ctx) -> float:
    """Module-level (a spawned child imports it): reports, then squares x; -1 raises, -2 kills its process, a
    fraction sleeps that long first."""
    ctx.put((ctx.key, "msg", f"working on {x}"))
    if x == -1:
        raise ValueError("negative")
    if x == -2:
        os._exit(3)
    if 0 < x < 1 or x > 10:
        time.sleep(x)
    return x * x


def _run(jobs, processes=1):
    events = []
    done = list(PoolExecutor(processes).run_jobs(_job, jobs, lambda *e: events.append(e)))
    return done, events


def test_each_job_in_its_own_process_with_its_events_first():
    done, events = _run([Job("a", 3), Job("b", 4), Job("c", 5)])
    assert [(d.job.key, d.value, d.error) for d in done] == [("a", 9, None), ("b", 16, None), ("c", 25, None)]
    assert [(k, kind) for k, kind, _ in events] == [(k, kind) for k in "abc" for kind in (PLACED, "msg")]
    pids = [d.where["pid"] for d in done]
    assert len(set(pids)) == 3 and os.getpid() not in pids  # a fresh process per job, none of them this one
    assert all(d.where["executor"] == "local" for d in done)
    assert [p["pid"] for k, kind, p in events if kind == PLACED] == pids


def test_a_job_that_raises_or_dies_fails_alone():
    done, events = _run([Job("raises", -1), Job("dies", -2), Job("ok", 2)], processes=2)
    got = {d.job.key: (d.value, d.error) for d in done}
    assert got["raises"] == (None, "ValueError: negative")
    assert got["dies"][0] is None and "exit code 3" in got["dies"][1]
    assert got["ok"] == (4, None)
    assert ("dies", "msg", "working on -2") in events  # what it sent before dying still arrives


def _barrier(payload, ctx) -> bool:
    """Checks in under folder, then waits (30 s at most) until `n` jobs have: True when all were there at once."""
    folder, n = payload
    open(os.path.join(folder, ctx.key), "w").close()
    deadline = time.monotonic() + 30
    while len(os.listdir(folder)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(os.listdir(folder)) >= n


def test_jobs_run_side_by_side_up_to_the_process_count(tmp_path):
    done = list(PoolExecutor(3).run_jobs(_barrier, [Job(k, (str(tmp_path), 3)) for k in "abc"]))
    assert sorted(d.job.key for d in done) == list("abc") and all(d.value is True for d in done)


def test_stopping_early_terminates_running_jobs_and_starts_no_queued_one():
    import multiprocessing as mp

    events = []
    outcomes = PoolExecutor(2).run_jobs(_job, [Job("slow", 60), Job("fast", 0.5), Job("never", 3)],
                                        lambda *e: events.append(e))
    assert next(outcomes).job.key == "fast"
    children = mp.active_children()
    assert children, "the slow job's process should still run"
    t0 = time.monotonic()
    outcomes.close()  # what a Ctrl-C in the driver does to the generator (tune_on_executor closes it)
    assert time.monotonic() - t0 < 15
    assert not any(p.is_alive() for p in children), "a job outlived the driver"
    assert "never" not in {k for k, _kind, _p in events}


class _Scripted:
    """An executor that runs nothing: each job's outcome is scripted by its key (a Winner, a list, or an error)."""

    name = "scripted"

    def __init__(self, script):
        self.script, self.seen = script, []

    def run_jobs(self, fn, jobs, on_event=None):
        from leka.executors.base import JobDone, where

        for job in jobs:
            self.seen.append((fn, job))
            on_event(job.key, PLACED, where("scripted", "node-1"))
            out = self.script[job.key]
            yield JobDone(job, error=out) if isinstance(out, str) else JobDone(job, out, where={"node": "node-1"})


def test_optimize_fans_searches_and_the_quick_pass_out_through_one_function(tmp_path):
    """tune_on_executor: a job per searched kernel with the round's attempt, the quick pass last with `until`;
    a failed job keeps its kernel's default (crashed_winner, not stored); decisions stored as they come back."""
    from leka.executors.base import where
    from leka.executors.progress import node_label
    from leka.executors.tuning import tune_on_executor
    from leka.optimize.db import TuningDB, Winner, target_key
    from leka.optimize.extract import KernelSpec
    from leka.optimize.profile import KernelProfile
    from leka.optimize.tune import QUICK_KEY, QuickJob, TuneJob, run_tuning_job
    from leka.targets import get_target

    def prof(key, budget=None, quick=False):
        return KernelProfile(KernelSpec(key, key, [key], 1, "", []), 1.0, 0.3, budget, quick=quick, quick_minutes=0.5)

    def decided(key, source=None):
        return Winner(key, f"k-{key}", source, 2.0 if source else None, None, None, "m", "run", None,
                      {"correct": True, "measured_speedup": 2.0 if source else 1.0})

    preset = get_target("host-cpu")
    profs = [prof("a", "minutes=1"), prof("b", "minutes=1"), prof("q1", quick=True), prof("q2", quick=True)]
    ex = _Scripted({"a": decided("a", "src-a"), "b": "worker process died (exit code -9)",
                    QUICK_KEY: [decided("q1", "src-q1"), decided("q2")]})
    events = []
    with TuningDB(tmp_path / "t.db") as db:
        got = tune_on_executor(ex, profs, preset, "m", {}, "run", db, lambda *e: events.append(e), until=123.0,
                               attempt=2)
        tkey = target_key(preset)
        stored = {k: db.get(k, tkey) for k in ("a", "b", "q1", "q2")}
    assert [job.key for _fn, job in ex.seen] == ["a", "b", QUICK_KEY]
    assert all(fn is run_tuning_job for fn, _job in ex.seen)
    a, _b, quick = (job.payload for _fn, job in ex.seen)
    assert isinstance(a, TuneJob) and a.attempt == 2 and a.budget == "minutes=1"
    assert isinstance(quick, QuickJob) and [s.key for s in quick.specs] == ["q1", "q2"] and quick.until == 123.0
    assert quick.minutes == 1.0  # the quick kernels' minutes pooled
    assert got["b"].source is None and "exit code -9" in got["b"].detail["error"]
    assert got["a"].detail["where"] == {"node": "node-1"} and got["q1"].source == "src-q1"
    assert stored["a"].source == "src-a" and stored["b"] is None  # a crash is tried again next run
    assert stored["q1"].source == "src-q1" and stored["q2"] is not None  # a settled default is remembered
    assert [k for k, kind, _ in events if kind == "done"] == ["a", "b", "q1", "q2"]
    node = node_label(where("scripted", "node-1"))  # the view gets the node's label, for each kernel of a job
    assert [(k, p) for k, kind, p in events if kind == PLACED] == [(k, node) for k in ("a", "b", "q1", "q2")]
