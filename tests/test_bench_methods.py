"""Built-in methods: registry, dlight on graphs, onnxruntime (correctness, applicability)."""
import pytest

from leka.methods import MethodContext, UnknownMethodError, get_method, list_methods
from leka.targets import get_target
from leka.tasks import get_task


def test_registry():
    assert {"tvm-naive", "tvm-dlight", "onnxruntime"} <= set(list_methods())
    with pytest.raises(UnknownMethodError, match="known: "):
        get_method("no-such-method")


def test_dlight_on_graphs_counts_scheduled_functions():
    import tvm

    from leka.methods.tvm_dlight import schedule_graph

    host = get_target("host-cpu")
    mod, n_sched, n_funcs = schedule_graph(get_task("l3-ad-autoencoder-b1").build(), host)
    assert n_funcs >= 4 and n_sched == n_funcs  # batch-1 dense layers (deduplicated) are GEMVs: dl.cpu.GEMV
    tvm.script.from_source(mod.script())  # the scheduled graph is still a valid text candidate


def _ctx(ev):
    from leka.budget import Budget

    return MethodContext(evaluator=ev, budget=Budget.unlimited(), store=None, run_id="t", options={})


def test_onnxruntime_correct_on_graph_and_not_applicable_without_onnx():
    from leka.evaluator import EvalConfig, Evaluator

    host = get_target("host-cpu")
    m = get_method("onnxruntime", {})
    assert m.applies(get_task("ex-matmul-256"), host) == "task has no ONNX form"
    assert m.applies(get_task("l3-mfcc-frontend"), get_target("rpi4")) is not None
    with Evaluator(host, EvalConfig(trials=2, measure=False)) as ev:
        (s,) = m.run(get_task("l3-mfcc-frontend"), host, _ctx(ev))
    r = s.to_record()
    assert r["compiled"] and r["correct"] is True and r["failure"] is None
    assert r["versions"]["onnxruntime"] and r["method"] == "onnxruntime"


def test_onnxruntime_timed_against_tvm_naive():
    from leka.evaluator import EvalConfig, Evaluator

    host = get_target("host-cpu")
    with Evaluator(host, EvalConfig(trials=1, min_rounds=3, min_time_s=0.01)) as ev:
        (s,) = get_method("onnxruntime", {}).run(get_task("l3-dstcn-block-k15"), host, _ctx(ev))
    r = s.to_record()
    assert r["correct"] is True and r["candidate_ms"] > 0 and r["baseline"] == "tvm-naive"
    assert r["baseline_ms"] > 0 and r["speedup"] == pytest.approx(r["baseline_ms"] / r["candidate_ms"])
