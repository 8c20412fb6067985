"""The executor interface without Ray: the local executor through the fan-out driver stores every missing
sample once, with where it ran; the progress prints one plain line per sample when piped; a bad executor
name is a one-line error."""
from pathlib import Path

import pytest

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
