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


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_keyword_rnn_matches_onnxruntime(tmp_path, cell):
    onnx.save(kws_rnn(cell, frames=12, hidden=16), str(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).standard_normal((1, 12, 10)).astype(np.float32)
    (want,), (got,) = run_both(tmp_path / "m.onnx", {"mfcc": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
