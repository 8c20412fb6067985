"""Which ONNX operators `leka optimize` imports, and how (`leka optimize --list-ops`, docs/optimize.md).

"frontend": TVM's Relax ONNX frontend converts the node itself (its converter map; a converter may still refuse
some attribute values, then the import fails with a one-line error naming the node). "unrolled": rewritten
before the import by rewrite_rnn.py. "rewritten": by rewrite_quant.py. Anything else is refused at import
with `unsupported operator OP (node NAME, output OUT)`.
"""
from __future__ import annotations

from .rewrite_quant import CONTRIB_OPS, QUANT_OPS
from .rewrite_rnn import RNN_OPS

HOW = {"frontend": "TVM's Relax ONNX frontend",
       "unrolled": "unrolled over the pinned sequence length before the import (leka/optimize/rewrite_rnn.py); "
                   "on CPU targets one kernel per direction where it covers the form (rnn_kernel.py)",
       "rewritten": "integer arithmetic in float32 + ONNX Runtime's requantisation (leka/optimize/rewrite_quant.py)"}


def supported_ops() -> list[tuple[str, str, str]]:
    """(domain, op, how) for every importable operator, sorted by domain then op."""
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    rows = {("ai.onnx", op): "frontend" for op in _get_convert_map()}
    rows.update({("ai.onnx", op): "unrolled" for op in RNN_OPS})
    rows.update({("ai.onnx", op): "rewritten" for op in QUANT_OPS})
    rows.update({("com.microsoft", op): "rewritten" for op in CONTRIB_OPS})
    return sorted((d, op, how) for (d, op), how in rows.items())
