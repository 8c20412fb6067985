"""LSTM / GRU / RNN unrolled before the Relax import (leka/optimize/rewrite_rnn.py), or on CPU targets one
kernel per direction (leka/optimize/rnn_kernel.py), each against ONNX Runtime through leka's import + build
path (import_model -> compile_model -> the Relax VM)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from leka.optimize import OptimizeError
from tests.onnx_vs_ort import run_both

SEQ, BATCH, IN, HID = 5, 2, 6, 8


def rnn_model(path: Path, op: str, direction: str = "forward", bias: bool = True, init_h: bool = False,
              layout: int = 0, seed: int = 0, seq: int = SEQ, **attrs) -> tuple[Path, dict[str, np.ndarray]]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    nd = 2 if direction == "bidirectional" else 1
    xs = [seq, BATCH, IN] if layout == 0 else [BATCH, seq, IN]
    hs = [nd, BATCH, HID] if layout == 0 else [BATCH, nd, HID]
    inits = [numpy_helper.from_array(rng.normal(0, 0.5, (nd, g * HID, IN)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.normal(0, 0.5, (nd, g * HID, HID)).astype(np.float32), "R")]
    ins = ["x", "W", "R", "B" if bias else "", "", "h0" if init_h else ""]
    if bias:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.5, (nd, 2 * g * HID)).astype(np.float32), "B"))
    graph_in = [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)]
    feeds = {"x": rng.normal(0, 1, xs).astype(np.float32)}
    if init_h:
        graph_in.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, hs))
        feeds["h0"] = rng.normal(0, 1, hs).astype(np.float32)
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ins, outs, name="rec", hidden_size=HID, direction=direction, layout=layout, **attrs)
    ys = [seq, nd, BATCH, HID] if layout == 0 else [BATCH, seq, nd, HID]
    out_vi = [helper.make_tensor_value_info(o, TensorProto.FLOAT, ys if o == "Y" else hs) for o in outs]
    graph = helper.make_graph([node], "rnn", graph_in, out_vi, initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    return path, feeds


CASES = [("LSTM", {}), ("GRU", {}), ("RNN", {}),
         ("LSTM", {"direction": "bidirectional", "init_h": True}), ("LSTM", {"bias": False}),
         ("GRU", {"direction": "bidirectional"}), ("GRU", {"linear_before_reset": 1, "init_h": True}),
         ("GRU", {"direction": "reverse", "bias": False}), ("RNN", {"direction": "bidirectional", "init_h": True}),
         ("LSTM", {"layout": 1, "init_h": True}), ("LSTM", {"clip": 0.5}),
         ("GRU", {"activations": ["HardSigmoid", "Relu"], "activation_alpha": [0.3], "activation_beta": [0.4]})]


@pytest.mark.parametrize("fused", [False, True], ids=["unrolled", "fused"])
@pytest.mark.parametrize("op,kw", CASES, ids=[f"{op}-{'-'.join(kw) or 'default'}" for op, kw in CASES])
def test_recurrent_op_matches_onnxruntime(tmp_path, op, kw, fused):
    path, feeds = rnn_model(tmp_path / "m.onnx", op, **kw)
    want, got = run_both(path, feeds, reference=kw.get("layout") == 1, fused_rnn=fused)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fused", [False, True], ids=["unrolled", "fused"])
def test_lstm_with_peepholes_and_initial_cell(tmp_path, fused):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path, feeds = rnn_model(tmp_path / "m.onnx", "LSTM", init_h=True)
    m = onnx.load(str(path))
    rng = np.random.default_rng(1)
    m.graph.initializer.append(numpy_helper.from_array(rng.normal(0, 0.5, (1, 3 * HID)).astype(np.float32), "P"))
    m.graph.input.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, BATCH, HID]))
    node = m.graph.node[0]
    node.input.extend(["c0", "P"])
    onnx.save(m, str(path))
    feeds["c0"] = rng.normal(0, 1, (1, BATCH, HID)).astype(np.float32)
    want, got = run_both(path, feeds, fused_rnn=fused)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_unsupported_recurrent_forms_are_one_line_errors(tmp_path):
    import onnx

    from leka.optimize.importer import import_model

    path, _ = rnn_model(tmp_path / "m.onnx", "LSTM", input_forget=1)
    with pytest.raises(OptimizeError, match=r"cannot unroll LSTM node 'rec'.*input_forget"):
        import_model(path)
    path, _ = rnn_model(tmp_path / "g.onnx", "GRU", activations=["Sigmoid", "Affine"])
    with pytest.raises(OptimizeError, match=r"activation 'Affine' is not supported") as e:
        import_model(path)
    assert "\n" not in str(e.value)
    m = onnx.load(str(path))  # weights computed at run time (a graph input), not constants
    m.graph.node[0].attribute.pop()  # activations back to the default
    m.graph.initializer.pop(0)
    m.graph.input.append(onnx.helper.make_tensor_value_info("W", onnx.TensorProto.FLOAT, [1, 3 * HID, IN]))
    onnx.save(m, str(path))
    with pytest.raises(OptimizeError, match=r"W \(W\) must be a constant"):
        import_model(path)


STEP_CALLS = [("LSTM", {}, 3), ("LSTM", {"direction": "bidirectional", "init_h": True}, 6), ("GRU", {}, 3),
              ("GRU", {"linear_before_reset": 1}, 2), ("RNN", {}, 1)]


@pytest.mark.parametrize("op,kw,most", STEP_CALLS, ids=[f"{op}-{'-'.join(kw) or 'default'}" for op, kw, _ in STEP_CALLS])
def test_kernel_calls_per_time_step(tmp_path, op, kw, most):
    """One more time step adds at most `most` kernel calls to the fused module (issue 22: LSTM three, the
    recurrent MatMul + input row, the gates + new c, new h; GRU three with linear_before_reset=0, two with
    1; RNN one). Catches a rewrite whose per-step ops stop fusing."""
    from leka.optimize.extract import call_counts
    from leka.optimize.importer import import_model

    calls = []
    for seq in (5, 6):
        path, _ = rnn_model(tmp_path / f"m{seq}.onnx", op, seq=seq, **kw)
        calls.append(sum(n for n, _ in call_counts(import_model(path)[1]).values()))
    assert 0 < calls[1] - calls[0] <= most, calls


FUSED = [("LSTM", {}, 1), ("LSTM", {"direction": "bidirectional", "init_h": True}, 2), ("GRU", {}, 1),
         ("GRU", {"linear_before_reset": 1}, 1), ("RNN", {"activations": ["Relu"]}, 1),
         ("LSTM", {"clip": 0.5}, 0), ("RNN", {"activations": ["Softsign"]}, 0)]


@pytest.mark.parametrize("op,kw,kernels", FUSED, ids=[f"{op}-{'-'.join(kw) or 'default'}" for op, kw, _ in FUSED])
def test_fused_import_is_one_kernel_per_direction(tmp_path, op, kw, kernels):
    """CPU import (fused_rnn): each direction the recurrence kernel covers is one call however long the
    sequence, its kernel is marked fixed and gets no budget; clip or other activations stay unrolled."""
    from leka.optimize.extract import call_counts, kernel_specs
    from leka.optimize.importer import import_model
    from leka.optimize.profile import FIXED_WHY, KernelProfile, split_budget

    calls = []
    for seq in (5, 6):
        path, _ = rnn_model(tmp_path / f"m{seq}.onnx", op, seq=seq, **kw)
        mod = import_model(path, fused_rnn=True)[1]
        counts = call_counts(mod)
        calls.append(sum(n for n, _ in counts.values()))
        assert sum(n for name, (n, _) in counts.items() if "_sequence" in name) == kernels
    if kernels:
        assert calls[0] == calls[1], calls
        profs = [KernelProfile(s, 1.0, share=0.5) for s in kernel_specs(mod)]
        split_budget(profs, "minutes=5")
        fixed = [p for p in profs if p.spec.fixed]
        assert fixed and all(p.budget is None and not p.quick and p.why_not == FIXED_WHY for p in fixed)
    else:
        assert calls[1] > calls[0], calls


def test_a_file_cannot_call_the_recurrence_kernel_itself(tmp_path):
    """attack: a model file with its own LekaRecurrence node (the rewrite's internal operator), shapes and
    attributes of its choosing; expect: refused in one line naming the node, as any unknown operator."""
    import onnx
    from onnx import TensorProto, helper

    from leka.optimize.importer import import_model
    from leka.optimize.rnn_kernel import DOMAIN, OP_TYPE

    vi = helper.make_tensor_value_info
    node = helper.make_node(OP_TYPE, ["x", "x", "x", "x", "x"], ["y", "h", "c"], name="forged", domain=DOMAIN,
                            cell="LSTM", hidden=4096)
    graph = helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT, [2, 1, 8])],
                              [vi("y", TensorProto.FLOAT, [2, 1, 4096])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid(DOMAIN, 1)]),
              str(tmp_path / "m.onnx"))
    for fused in (False, True):
        with pytest.raises(OptimizeError, match=rf"unsupported operator {DOMAIN}\.{OP_TYPE} \(node 'forged'") as e:
            import_model(tmp_path / "m.onnx", fused_rnn=fused)
        assert "\n" not in str(e.value)
