"""L3 graph workloads: ONNX graphs -> Relax modules that print as parseable TVMScript and match ONNX Runtime."""
import numpy as np
import pytest

from leka.tasks import all_tasks

L3 = [t for t in all_tasks() if t.level == 3]
SMALL = ["l3-kws-dscnn", "l3-mfcc-frontend", "l3-resnet-block-s2"]


def test_l3_suite_size_and_metadata():
    assert len(L3) >= 15 and len({t.pattern for t in L3}) >= 10
    for t in L3:
        assert t.onnx_model is not None and t.flops > 0 and t.bytes > 0
        assert len(t.outputs) >= 1 and t.inputs
    ids = {t.id for t in L3}
    for mlperf_tiny in ("l3-kws-dscnn", "l3-vww-mobilenetv1-025", "l3-ic-resnet8", "l3-ad-autoencoder-b1"):
        assert mlperf_tiny in ids


def test_mlperf_tiny_macs_match_reference_counts():
    # reference (edge-workloads-and-hardware.md §1.1, derived): KWS 2.66 M MACs, VWW 7.49 M, ResNet-8 12.5 M
    flops = {t.id: t.flops for t in L3}
    assert flops["l3-kws-dscnn"] / 2 == pytest.approx(2.66e6, rel=0.03)
    assert flops["l3-vww-mobilenetv1-025"] / 2 == pytest.approx(7.49e6, rel=0.03)
    assert flops["l3-ic-resnet8"] / 2 == pytest.approx(12.5e6, rel=0.03)


def _check_graph(task):
    import tvm
    from tvm import relax

    mod = tvm.script.from_source(task.build().script())  # a candidate is text: it must parse back
    ex = tvm.compile(mod, target=tvm.target.Target({"kind": "llvm", "num-cores": 2}))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(0)
    for dist in ("normal", "heavy"):
        ins = task.generate_inputs(rng, dist)
        ref = task.run_reference(ins)
        out = vm["main"](*[tvm.runtime.tensor(a) for a in ins])
        got = [out] if hasattr(out, "numpy") else list(out)
        rtol, atol = task.tolerance()
        for g, r in zip(got, ref, strict=True):
            np.testing.assert_allclose(g.numpy(), r, rtol=rtol, atol=atol * np.abs(r).max())


@pytest.mark.parametrize("task_id", SMALL)
def test_small_graphs_build_and_match_onnxruntime(task_id):
    _check_graph(next(t for t in L3 if t.id == task_id))


@pytest.mark.slow
@pytest.mark.parametrize("task_id", [t.id for t in L3])
def test_every_graph_builds_and_matches_onnxruntime(task_id):
    _check_graph(next(t for t in L3 if t.id == task_id))


def test_inputs_deterministic_and_weights_scaled():
    t = next(t for t in L3 if t.id == "l3-ic-resnet8")
    a = t.generate_inputs(np.random.default_rng(1), "heavy")
    b = t.generate_inputs(np.random.default_rng(1), "heavy")
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    w = dict(zip([s.name for s in t.inputs], a))
    first_conv = w["w1"]  # 16x3x3x3, fan_in 27: He std sqrt(2/27) ~ 0.27
    assert 0.15 < first_conv.std() < 0.4
