"""One ONNX model through ONNX Runtime and through leka's import + build path (import_model -> compile_model
-> the Relax VM), for the operator-coverage tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def save(path: Path, nodes: list, inputs: list, outputs: list, inits: list, opset: int = 17,
         ms_opset: bool = False) -> Path:
    import onnx
    from onnx import helper

    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms_opset else [])
    onnx.save(helper.make_model(helper.make_graph(nodes, "m", inputs, outputs, initializer=inits),
                                opset_imports=ops), str(path))
    return path


def run_both(path: Path, feeds: dict[str, np.ndarray], reference: bool = False,
             fused_rnn: bool = False) -> tuple[list, list]:
    """(the expected outputs, leka's build's outputs) of the model at `path` on `feeds`; expected from ONNX
    Runtime, or with `reference` from onnx's reference implementation (for forms ONNX Runtime refuses).
    `fused_rnn`: recurrent nodes imported as one kernel each (CPU targets' import)."""
    import onnxruntime as ort
    import tvm
    from tvm import relax

    from leka.optimize.build_job import compile_model
    from leka.optimize.importer import import_model
    from leka.targets import get_target

    if reference:
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(str(path)).run(None, feeds)
    else:
        want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    loaded, fused = import_model(path, fused_rnn=fused_rnn)
    vm = relax.VirtualMachine(compile_model(fused, get_target("host-cpu")), tvm.cpu())
    got = vm["main"](*[tvm.runtime.tensor(feeds[i.name]) for i in loaded.inputs])
    got = [got] if hasattr(got, "numpy") else list(got)
    return want, [g.numpy() for g in got]
