"""Transformer operators (LayerNormalization, Erf-GELU, the opset-20 Gelu op, torch's
Reshape/Transpose/MatMul/Softmax attention) and the held-out recurrent keyword models, against ONNX Runtime
through leka's import + build path (small sizes: the acceptance sizes run in experiments/holdout_models.py)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from leka.optimize.holdout_models import encoder_block, kws_rnn
from tests.onnx_vs_ort import run_both


@pytest.mark.parametrize("opset,gelu_op", [(17, False), (20, True)])
def test_encoder_block_matches_onnxruntime(tmp_path, opset, gelu_op):
    model = encoder_block(seq=8, d=32, heads=2, ff=64, opset=opset, gelu_op=gelu_op)
    ops = {n.op_type for n in model.graph.node}
    assert {"LayerNormalization", "Softmax", "Transpose", "MatMul", "Gelu" if gelu_op else "Erf"} <= ops
    onnx.save(model, str(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).standard_normal((1, 8, 32)).astype(np.float32)
    (want,), (got,) = run_both(tmp_path / "m.onnx", {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fused", [False, True], ids=["unrolled", "fused"])
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_keyword_rnn_matches_onnxruntime(tmp_path, cell, fused):
    onnx.save(kws_rnn(cell, frames=12, hidden=16), str(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).standard_normal((1, 12, 10)).astype(np.float32)
    (want,), (got,) = run_both(tmp_path / "m.onnx", {"mfcc": x}, fused_rnn=fused)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_optimize_keyword_lstm_keeps_its_recurrence_kernel(tmp_path):
    """`leka optimize` on a CPU target: the LSTM is one kernel, reported as scheduled as written (no search
    spent on it), and the artifact is verified against ONNX Runtime."""
    import json

    from leka.cli.main import main
    from leka.optimize.profile import FIXED_WHY

    onnx.save(kws_rnn("LSTM", frames=12, hidden=16), str(tmp_path / "m.onnx"))
    rc = main(["optimize", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.leka"), "--db", str(tmp_path / "db"),
               "--method", "tvm-dlight", "--budget", "compiles=4,measurements=4", "--time-s", "0", "--quiet"])
    assert rc == 0
    manifest = json.loads((tmp_path / "m.leka" / "manifest.json").read_text())
    assert manifest["verification"]["status"] == "passed"
    rec = [k for k in manifest["kernels"] if "_sequence" in k["name"]]
    assert len(rec) == 1 and FIXED_WHY in rec[0]["decision"], rec


@pytest.mark.parametrize("case", ["layernorm-axis-2-no-bias", "gelu-tanh", "gelu"])
def test_single_transformer_ops_match_onnxruntime(tmp_path, case):
    from onnx import TensorProto, helper, numpy_helper

    from tests.onnx_vs_ort import save

    rng = np.random.default_rng(0)
    if case.startswith("layernorm"):
        nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-2, epsilon=1e-3)]
        inits, opset = [numpy_helper.from_array(rng.normal(size=(6, 8)).astype(np.float32), "s")], 17
    else:
        nodes = [helper.make_node("Gelu", ["x"], ["y"], **({"approximate": "tanh"} if case == "gelu-tanh" else {}))]
        inits, opset = [], 20
    vi = helper.make_tensor_value_info
    path = save(tmp_path / "m.onnx", nodes, [vi("x", TensorProto.FLOAT, [2, 6, 8])],
                [vi("y", TensorProto.FLOAT, [2, 6, 8])], inits, opset=opset)
    (want,), (got,) = run_both(path, {"x": rng.normal(0, 2, (2, 6, 8)).astype(np.float32)})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
