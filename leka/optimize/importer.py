"""ONNX -> Relax through TVM's frontend, then legalisation and operator fusion into PrimFunc kernels.

Weights stay constants of the module (keep_params_in_input=False); dynamic dimensions must be pinned with
--shape NAME=1x3x224x224. Every failure is one line naming what is wrong: an unreadable file, a file that
is not ONNX, an operator the frontend lacks (with its node), a dynamic input without --shape.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from . import OptimizeError
from .real_models import is_structure_only

MAX_INPUT_BYTES = 1 << 30  # one model input at most (1x65536x65536 float32 would be 16 GiB)

# ONNX element types -> numpy dtype names (the ones a deployable model's inputs use).
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
               11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass
class LoadedModel:
    path: str
    model: Any  # onnx.ModelProto
    sha256: str
    inputs: list[TensorInfo]  # graph inputs that are not initializers, with pinned shapes
    outputs: list[str]
    opset: int
    # CPU targets: recurrent nodes as one kernel each (rnn_kernel) rather than unrolled; set before
    # frontend_model is first read (import_model)
    fused_rnn: bool = False

    @cached_property
    def frontend_model(self) -> Any:
        """The model as TVM's frontend is given it, by every import route (`leka optimize`, ONNX tasks):
        LSTM/GRU/RNN unrolled over the pinned sequence length or, with fused_rnn, each a projection and one
        LekaRecurrence kernel (rewrite_rnn), and QOperator nodes rewritten
        into operators the frontend has (rewrite_quant); `model` itself when neither applies. Its
        initializers may differ from the file's (added, split): an import with weights as parameters
        takes these. Computed once, so every caller sees the same initializers. A refusal is one line."""
        from .rewrite_quant import expand_qoperators
        from .rewrite_rnn import expand_rnns

        try:
            return expand_qoperators(expand_rnns(self.model, {i.name: list(i.shape) for i in self.inputs},
                                                 fused=self.fused_rnn))
        except OptimizeError as e:
            raise OptimizeError(f"{self.path}: {e}") from None
        except Exception as e:  # onnx's shape inference raises many kinds
            raise OptimizeError(f"{self.path}: cannot rewrite the model for TVM's ONNX frontend: "
                                f"{_first_line(e)}") from None


def parse_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """`--shape NAME=1x3x224x224` (repeatable) -> {NAME: (1, 3, 224, 224)}."""
    out: dict[str, tuple[int, ...]] = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        if not sep or not name or not re.fullmatch(r"\d+(x\d+)*", dims.strip()):
            raise OptimizeError(f"bad --shape {item!r}: expected NAME=DxDx..., e.g. input=1x3x224x224")
        out[name.strip()] = tuple(int(d) for d in dims.strip().split("x"))
    return out


def load_model(path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None) -> LoadedModel:
    import onnx

    p = Path(path)
    if not p.is_file():
        raise OptimizeError(f"{path}: no such file")
    data = p.read_bytes()
    try:
        model = onnx.load_from_string(data)
    except Exception as e:  # protobuf's DecodeError and friends
        raise OptimizeError(f"{path}: not an ONNX model (cannot parse it: {type(e).__name__})") from None
    if not model.graph.node:
        raise OptimizeError(f"{path}: not an ONNX model (no graph nodes; corrupt or another format)")
    _load_external_data(model, p)
    if is_structure_only(model):
        raise OptimizeError(f"{path}: a structure-only model (weight values stripped); write a runnable copy "
                            f"with: python -m leka.optimize.real_models OUT_DIR {p.name.split('.')[0]}")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise OptimizeError(f"{path}: invalid ONNX model: {str(e).strip().splitlines()[0][:300]}") from None
    shapes = dict(shapes or {})
    inputs = _graph_inputs(model, shapes, str(path))
    unknown = sorted(set(shapes) - {i.name for i in inputs})
    if unknown:
        raise OptimizeError(f"--shape names unknown input(s) {', '.join(unknown)}; the model's inputs: "
                            f"{', '.join(i.name for i in inputs)}")
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    return LoadedModel(str(path), model, hashlib.sha256(data).hexdigest(), inputs,
                       [o.name for o in model.graph.output], opset)


def _graph_inputs(model: Any, shapes: dict[str, tuple[int, ...]], path: str) -> list[TensorInfo]:
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = ONNX_DTYPES.get(tt.elem_type)
        if dtype is None:
            raise OptimizeError(f"{path}: input {vi.name} has an unsupported element type {tt.elem_type}")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if vi.name in shapes:
            pinned = shapes[vi.name]
            if len(pinned) != len(dims) or any(d is not None and d != s for d, s in zip(dims, pinned)):
                raise OptimizeError(f"--shape {vi.name}={'x'.join(map(str, pinned))} does not fit the model's "
                                    f"shape {['?' if d is None else d for d in dims]}")
            dims = list(pinned)
        if any(d is None or d <= 0 for d in dims):
            shown = "x".join("?" if d is None else str(d) for d in dims)
            raise OptimizeError(f"{path}: input {vi.name} has dynamic shape {shown}; pin it with "
                                f"--shape {vi.name}=" + "x".join(str(d) if d else "1" for d in dims))
        sizes = [int(d) for d in dims if d is not None]  # none is None after the check above
        nbytes = math.prod(sizes) * np.dtype(dtype).itemsize
        if nbytes > MAX_INPUT_BYTES:
            raise OptimizeError(f"{path}: input {vi.name} declares {'x'.join(map(str, dims))} {dtype} "
                                f"({nbytes:,} bytes), over the {MAX_INPUT_BYTES:,}-byte limit of one input")
        out.append(TensorInfo(vi.name, tuple(sizes), dtype))
    return out


def _load_external_data(model: Any, path: Path) -> None:
    """Weights stored beside the model (ONNX external data) are read from the model's folder, never from the
    working directory, and only from inside it (ONNX refuses a location that leaves it)."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if not any(uses_external_data(t) for t in model.graph.initializer):
        return
    try:
        load_external_data_for_model(model, str(path.resolve().parent))
    except Exception as e:  # a missing file, a location outside the folder
        raise OptimizeError(f"{path}: its external weight data cannot be read from {path.parent} "
                            f"({type(e).__name__}: {str(e).strip()[:160]})") from None


def to_relax(loaded: LoadedModel, keep_params_in_input: bool = False) -> Any:
    """`loaded.frontend_model` as a Relax IRModule (unsupported operators named with a node): weights as
    constants, or with keep_params_in_input as parameters of main after the model's inputs, one per
    initializer of `loaded.frontend_model` in its order (ONNX tasks: leka/tasks/onnx_task.py)."""
    from tvm.relax.frontend.onnx import from_onnx

    from .rnn_kernel import frontend_converter

    shape_dict = {i.name: list(i.shape) for i in loaded.inputs}
    dtype_dict = {i.name: i.dtype for i in loaded.inputs}
    model = loaded.frontend_model
    _check_operators(model, loaded.path, loaded.model)
    try:
        model = fold_shape_arithmetic(model, shape_dict)
        with frontend_converter():
            return from_onnx(model, shape_dict=shape_dict, dtype_dict=dtype_dict,
                             keep_params_in_input=keep_params_in_input)
    except Exception as e:
        raise OptimizeError(f"{loaded.path}: TVM's ONNX frontend failed{_failing_node(e)}: {_first_line(e)}") from None


def _failing_node(e: BaseException) -> str:
    """' on node NAME (OP, output OUT)' for the ONNX node the frontend was converting when `e` was raised
    (its node loop's local `node`, found in the traceback), '' when the failure is outside that loop."""
    tb, node = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_construct_nodes" and hasattr(tb.tb_frame.f_locals.get("node"), "op_type"):
            node = tb.tb_frame.f_locals["node"]
        tb = tb.tb_next
    if node is None:
        return ""
    return f" on node {node.name or '<unnamed>'!r} ({node.op_type}, output {node.output[0] if node.output else '?'})"


# Integer outputs of these operators are shape arithmetic when their inputs are known (old converters emit
# Shape -> Gather -> Unsqueeze -> Concat -> Reshape/Slice chains); folded, so the frontend sees constants.
_FOLDABLE = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Add", "Sub", "Mul", "Div", "Cast",
             "Floor", "Ceil", "Range", "Equal", "Where", "Identity", "ConstantOfShape", "Expand", "Reshape",
             "ReduceProd", "Neg", "Max", "Min", "Less", "Greater", "Not", "And", "Or", "Size"}


def fold_shape_arithmetic(model: Any, shapes: dict[str, list[int]]) -> Any:
    """A copy of `model` where every integer-valued node computable from the pinned input shapes (Shape of
    a statically shaped tensor, arithmetic on such values and on integer constants) is a Constant. TVM's
    frontend otherwise emits dynamic reshapes/slices of known shapes (e.g. a TorchScript-exported
    channel split at opset 11), which legalisation rejects."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    g = onnx.shape_inference.infer_shapes(_with_input_shapes(model, shapes)).graph
    static = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in [*g.input, *g.value_info, *g.output]
              if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)}
    known = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.data_type in _INT_TYPES}
    opsets = {o.domain or "": o.version for o in model.opset_import}
    nodes, folded = [], 0
    for node in g.node:
        value = None
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            value = numpy_helper.to_array(node.attribute[0].t)
        elif node.op_type == "Shape" and node.domain in ("", "ai.onnx") and node.input[0] in static:
            value = _first_output(ReferenceEvaluator(node, opsets=opsets),
                                  {node.input[0]: np.empty(static[node.input[0]], np.float32)})
            folded += 1
        elif (node.op_type in _FOLDABLE and node.domain in ("", "ai.onnx") and len(node.output) == 1
              and all(i in known for i in node.input if i)):
            value = _first_output(ReferenceEvaluator(node, opsets=opsets), {i: known[i] for i in node.input if i})
            folded += 1
        if value is not None and np.asarray(value).dtype.kind in "iub":
            known[node.output[0]] = np.asarray(value)
            node = helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                    value=numpy_helper.from_array(np.asarray(value), node.output[0]))
        nodes.append(node)
    if not folded:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


_INT_TYPES = (6, 7, 9, 12, 13)  # int32, int64, bool, uint32, uint64


def _first_output(evaluator: Any, feeds: dict[str, Any]) -> Any:
    """The first output of onnx's ReferenceEvaluator (run(None, ...) returns the list of all outputs)."""
    return list(evaluator.run(None, feeds))[0]


def _with_input_shapes(model: Any, shapes: dict[str, list[int]]) -> Any:
    """`model` with its (pinned) input shapes written into the graph inputs, for shape inference."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    for vi in out.graph.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add(dim_value=int(d))
    return out


def _check_operators(model: Any, path: str, source: Any) -> None:
    """Every node of `model` (what the frontend gets) has a converter; LekaRecurrence nodes only as the rewrite
    made them: one in `source` (the file) is refused, so a file cannot call the recurrence kernel with shapes
    and attributes of its own choosing."""
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    from .rnn_kernel import DOMAIN, OP_TYPE

    known = _get_convert_map()
    forged = [n for n in source.graph.node if n.domain == DOMAIN][:1]
    for node in forged + [n for n in model.graph.node if (n.domain, n.op_type) != (DOMAIN, OP_TYPE)]:
        if node.domain not in ("", "ai.onnx") or node.op_type not in known:
            dom = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
            raise OptimizeError(f"{path}: unsupported operator {dom}{node.op_type} "
                                f"(node {node.name or '<unnamed>'!r}, output {node.output[0] if node.output else '?'})")


def fuse(mod: Any, target: Any = None) -> Any:
    """Legalise and fuse: each PrimFunc of the result is one kernel the model calls."""
    import tvm
    from tvm import relax

    passes = [relax.transform.DecomposeOpsForInference(), relax.transform.LegalizeOps(),
              relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(), relax.transform.FuseOps(),
              relax.transform.FuseTIR(), relax.transform.DeadCodeElimination()]
    try:
        return tvm.transform.Sequential(passes)(mod)
    except Exception as e:
        raise OptimizeError(f"legalisation/fusion failed: {_first_line(e)}") from None


def import_model(path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None,
                 fused_rnn: bool = False) -> tuple[LoadedModel, Any]:
    """Load, check and import: (LoadedModel, fused Relax IRModule). `fused_rnn` (CPU targets only: the
    recurrence kernel is CPU code): recurrent nodes as one kernel each."""
    loaded = load_model(path, shapes)
    loaded.fused_rnn = fused_rnn
    return loaded, fuse(to_relax(loaded))


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    for ln in lines:
        if "Error" in ln and ":" in ln:
            return ln[:300]
    return f"{type(e).__name__}: {(lines[-1] if lines else '')[:300]}"
