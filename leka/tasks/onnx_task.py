"""A user's ONNX model as a level-3 (graph) task, weights inside the file (the normal case).

A candidate is TVMScript text, and weights held as module constants print as `metadata[...]`
references that text cannot carry. So the model is imported with its weights as extra inputs of the
Relax `main` (x, ..., then every initializer, in order): the task's inputs are the model's inputs
plus its initializers, `make_inputs` draws the model's inputs per trial and always passes the
initializers' own values, and the reference is ONNX Runtime on the file itself. The import is
`leka optimize`'s (importer.to_relax on LoadedModel.frontend_model: LSTM/GRU/RNN unrolled, QOperator
nodes rewritten, operators checked), so the initializers are those of the rewritten model (the file's,
plus any the rewrites add). File, shape and operator problems are one-line errors naming the fix
(see docs/tasks.md).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from leka.errors import LekaError

from .task import ArgSpec, Task, generate

ONNX_RTOL, ONNX_ATOL = 1e-3, 1e-4  # graph-level reassociation (conv algorithms, fused sums) vs ORT


def _ort(model_bytes: bytes) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.log_severity_level = 3
    return ort.InferenceSession(model_bytes, sess_options=opts, providers=["CPUExecutionProvider"])


def _output_specs(sess: Any, feeds: dict[str, np.ndarray], path: str) -> tuple[ArgSpec, ...]:
    """Output shapes and dtypes from one ONNX Runtime run (shape inference may leave them symbolic)."""
    try:
        outs = sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001 - ORT's errors are long; one line
        raise LekaError(f"{path}: ONNX Runtime cannot run the model: {str(e).strip().splitlines()[0][:300]}") \
            from None
    names = [o.name for o in sess.get_outputs()]
    return tuple(ArgSpec(_arg_name(n, i, "y"), tuple(np.shape(a)), str(np.asarray(a).dtype), "output")
                 for i, (n, a) in enumerate(zip(names, outs)))


def _arg_name(name: str, i: int, prefix: str) -> str:
    """A parameter name TVMScript prints back (ONNX names may hold ':' or '/')."""
    clean = re.sub(r"\W", "_", name)
    return clean if clean and not clean[0].isdigit() else f"{prefix}{i}_{clean}"


def onnx_task(path: str | Path, *, id: str, domain: str, description: str = "", pattern: str | None = None,
              shapes: dict[str, Sequence[int]] | None = None, flops: int = 0, rtol: float = ONNX_RTOL,
              atol: float = ONNX_ATOL) -> Task:
    """The ONNX model at `path` as a level-3 Task. shapes pins dynamic input dimensions, e.g.
    {"input": (1, 3, 224, 224)}; flops (optional) feeds the roofline."""
    from onnx import numpy_helper

    from leka.optimize.importer import load_model

    try:
        loaded = load_model(path, {k: tuple(int(d) for d in v) for k, v in (shapes or {}).items()})
    except LekaError as e:  # the importer words its fixes for `leka optimize --shape`; say it for a task file
        msg = re.sub(r"--shape (\S+)=(\S+)", lambda m: f"shapes={{'{m.group(1)}': "
                     f"({', '.join(m.group(2).split('x'))})}}", str(e))
        raise LekaError(msg.replace("--shape names", "shapes= names")) from None
    model, src = loaded.model, str(path)
    weights = [(init.name, numpy_helper.to_array(init)) for init in loaded.frontend_model.graph.initializer]
    inputs = tuple(ArgSpec(_arg_name(i.name, n, "x"), i.shape, i.dtype) for n, i in enumerate(loaded.inputs))
    weight_specs = tuple(ArgSpec(_arg_name(n, k, "w"), tuple(a.shape), str(a.dtype)) for k, (n, a) in
                         enumerate(weights))
    model_bytes = model.SerializeToString()
    sess = _ort(model_bytes)
    zeros = {i.name: np.zeros(i.shape, dtype=i.dtype) for i in loaded.inputs}
    outputs = _output_specs(sess, zeros, src)
    n_act = len(inputs)
    feed_names = [i.name for i in loaded.inputs]

    def build() -> Any:
        return _relax_with_weight_params(loaded, len(weights))

    def reference(*arrays: np.ndarray) -> Any:
        outs = sess.run(None, {n: np.asarray(a, order="C") for n, a in zip(feed_names, arrays[:n_act])})
        return tuple(outs) if len(outs) > 1 else outs[0]

    def make_inputs(rng: np.random.Generator, dist: str) -> list[np.ndarray]:
        return [generate(s, rng, dist) for s in inputs] + [a.copy() for _, a in weights]

    nbytes = sum(a.nbytes for a in inputs + weight_specs + outputs)
    return Task(id=id, pattern=pattern or Path(src).stem, level=3, domain=domain, args=inputs + weight_specs + outputs,
                build=build, reference=reference, flops=flops, bytes=nbytes, dtype=inputs[0].dtype if inputs else "",
                description=description or f"ONNX model {Path(src).name}", rtol=rtol, atol=atol,
                make_inputs=make_inputs, onnx_model=lambda: model, tags=("graph", "onnx", "user"),
                extra={"onnx_file": src, "onnx_sha256": loaded.sha256, "onnx_opset": loaded.opset,
                       "onnx_nodes": len(model.graph.node),
                       "weights": f"{len(weights)} initializers ({len(model.graph.initializer)} from the file), "
                                  f"passed as inputs (fixed values)"})


def _relax_with_weight_params(loaded: Any, n_weights: int) -> Any:
    """The model as Relax with every initializer of loaded.frontend_model a parameter of main (after the
    model's inputs), through the import `leka optimize` uses."""
    from leka.optimize.importer import to_relax

    mod = to_relax(loaded, keep_params_in_input=True)
    main = mod["main"]
    if len(main.params) != len(loaded.inputs) + n_weights:
        raise LekaError(f"{loaded.path}: the imported model takes {len(main.params)} parameters, expected "
                        f"{len(loaded.inputs)} inputs + {n_weights} initializers")
    # the bound values live in attrs as metadata constants, which TVMScript text cannot carry
    for attr in ("params", "num_input"):
        if main.attrs is not None and attr in main.attrs:
            main = main.without_attr(attr)
    mod["main"] = main
    return mod
