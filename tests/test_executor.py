"""The executor interface without Ray: the local executor through the fan-out driver stores every missing
sample once, with where it ran; the progress prints one plain line per sample when piped; a bad executor
name is a one-line error."""
import io
from pathlib import Path

import pytest
from rich.console import Console

from leka.bench.store import ResultStore
from leka.errors import LekaError
from leka.executors import get_executor
from leka.executors.fanout import run_fanout
from leka.executors.progress import FanoutProgress, where_summary
from leka.methods import get_method
from leka.tasks import get_task, load_task_folder

TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")


def test_local_fanout_stores_each_missing_sample_once(tmp_path, capsys):
    load_task_folder(TASKS)
    tasks = [get_task("benchtest-add-64"), get_task("benchtest-gemv-32x64")]
    store = ResultStore(tmp_path / "r.sqlite")
    run_id = store.create_run("tvm-naive", "host-cpu", {})
    kw = dict(target_spec="host-cpu", trials=1, measure=False, task_paths=(TASKS,))
    method = get_method("tvm-naive", {})
    with FanoutProgress(2, 0, live=False) as prog:
        ex = get_executor("local")
        try:
            first = run_fanout(store, run_id, tasks[:1], method, 1, ex, {}, on_outcome=prog.update, **kw)
            second = run_fanout(store, run_id, tasks, method, 1, ex, {}, on_outcome=prog.update, **kw)
        finally:
            ex.close()
    assert (first.done, second.done, second.skipped_finished) == (1, 1, 1)
    recs = store.samples(run_id)
    assert sorted(r["task"] for r in recs) == sorted(t.id for t in tasks) and all(r["correct"] for r in recs)
    assert {r["where"]["executor"] for r in recs} == {"local"}
    [(executor, _node, n, failed)] = where_summary(recs)
    assert (executor, n, failed) == ("local", 2, 0)
    err = capsys.readouterr().err
    assert "[1/2] benchtest-add-64 #0 on" in err and ": ok" in err


def test_unknown_executor_is_an_error():
    with pytest.raises(LekaError, match="executors are local, ray"):
        get_executor("dask")


def _square_or_fail(x: int, ctx) -> int:
    ctx.put((ctx.key, "msg", f"squaring {x}"))
    if x < 0:
        raise ValueError("negative")
    return x * x


def test_local_jobs_report_where_events_and_a_failing_job_alone():
    from leka.executors.base import PLACED, Job

    events = []
    ex = get_executor("local")
    done = list(ex.run_jobs(_square_or_fail, [Job("a", 3), Job("b", -1), Job("c", 4)],
                            lambda *e: events.append(e)))
    assert [(d.job.key, d.value, d.error) for d in done] == [("a", 9, None), ("b", None, "ValueError: negative"),
                                                             ("c", 16, None)]
    assert [(k, kind) for k, kind, _ in events] == [(k, kind) for k in "abc" for kind in (PLACED, "msg")]
    assert all(d.where["executor"] == "local" for d in done)


def test_progress_counts_running_per_node(capsys):
    from leka.executors.base import PLACED, SampleOutcome, SampleSpec

    specs = [SampleSpec("r", "t", i, "m", "host-cpu") for i in range(3)]
    on = [{"executor": "ray", "host": h, "node": n} for h, n in (("h1", "n1"), ("h2", "n2"), ("h1", "n1"))]
    with FanoutProgress(3, 0, live=False) as prog:
        for s, w in zip(specs, on):
            prog.event(s.job_key(), PLACED, w)
        assert prog.running_on == {"h1 (n1)": 2, "h2 (n2)": 1} and (prog.running(), prog.queued()) == (3, 0)
        prog.update(SampleOutcome(specs[0], {"where": on[0], "failure": None}))
        assert prog.running_on == {"h1 (n1)": 1, "h2 (n2)": 1} and prog.done == {"h1 (n1)": 1}
        console = Console(width=100, file=io.StringIO(), record=True)
        console.print(prog.frame())
    text = console.export_text()
    table = [ln.split() for ln in text.splitlines()]
    assert "1/3 samples (0 stored before), 2 running, 0 queued" in " ".join(text.split())
    assert ["│", "h1", "(n1)", "│", "1", "│", "1", "│", "0", "│"] in table  # node, running, done, failed
    assert "(running: h1 (n1) 1, h2 (n2) 1)" in capsys.readouterr().err


class _Overrun:
    """Passes its own per-task limit (agent_budget compiles=1) on every attempt."""

    name, is_llm = "overrun-executor-test", False

    def run(self, task, target, ctx):
        from leka.methods.options import attempt_budget

        budget = attempt_budget(ctx, {"agent_budget": "compiles=1"})
        budget.charge("compiles")
        budget.charge("compiles")


def test_an_attempt_over_its_own_budget_is_budget_on_every_path(tmp_path):
    """One attempt runner: the run in this process (bench run, --executor local) and a job as a Ray task runs
    it (no driver environment) record an attempt past its per-task limit alike, as failure "budget"."""
    from leka.bench.runner import run_benchmark
    from leka.executors.base import SampleSpec, run_sample, where
    from leka.methods import register_method
    from leka.targets import get_target

    register_method(_Overrun.name, lambda options: _Overrun())
    load_task_folder(TASKS)
    task, target = get_task("benchtest-add-64"), get_target("host-cpu")

    class _NoEvaluator:  # the method never evaluates
        pass

    ev = _NoEvaluator()
    ev.target = target
    away = run_sample(SampleSpec("r", task.id, 0, _Overrun.name, "host-cpu", task_paths=(TASKS,)), ev, where("ray"))
    store = ResultStore(tmp_path / "r.sqlite")
    rid = store.create_run(_Overrun.name, "host-cpu", {})
    out = run_benchmark(store, rid, [task], target, _Overrun(), 1, ev, None, {})
    [here] = store.samples(rid)
    assert out.done == 1 and here["failure"] == away.record["failure"] == "budget"
    assert here["where"]["executor"] == "local" and away.record["where"]["executor"] == "ray"
