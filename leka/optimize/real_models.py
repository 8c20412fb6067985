"""Real converter output, stored structure-only: torchvision CNNs as torch.onnx exported them (several families,
old and new opsets), with every weight initializer's values stripped (name, shape, dtype kept). A fresh
clone needs no torch and the repository does not grow by megabytes; the weights are drawn here from a fixed
seed, scaled by the role of the tensor (He-scaled convolution filters, 1/sqrt(fan-in) dense weights,
positive batch-norm variances) so that activations stay O(1) through deep nets and the comparison with
ONNX Runtime means something. experiments/export_real_models.py regenerates the files from the converter.

  python -m leka.optimize.real_models OUT_DIR [NAME ...]     # writes OUT_DIR/NAME.onnx (runnable)
  python -m leka.optimize.real_models --list                 # names, converter, opset, input shape
"""
from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

MODEL_DIR = Path(__file__).resolve().parents[2] / "benchmark" / "models"
SUFFIX = ".structure.onnx"
MARK = "leka.structure_only"  # metadata key: the file's float weights were stripped
# A float initializer with at least this many elements is a weight: stripped; smaller ones (and every
# integer tensor: shapes, axes, indices) keep their values, they carry the graph's meaning.
STRIP_MIN_ELEMENTS = 16


def available() -> dict[str, Path]:
    """Bundled structure-only models: {name: path}."""
    return {p.name[: -len(SUFFIX)]: p for p in sorted(MODEL_DIR.glob(f"*{SUFFIX}"))}


def strip(model: Any, provenance: dict[str, str]) -> Any:
    """A copy of `model` with the values of its weight initializers and the nodes' debug metadata removed,
    and `provenance` (converter, versions, opset, source) recorded in its metadata."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        if _is_weight(t):
            dims, dtype, name = list(t.dims), t.data_type, t.name
            t.Clear()
            t.name, t.data_type = name, dtype
            t.dims.extend(dims)
    for node in out.graph.node:  # the converter's debug info (stack traces, fx nodes): most of the bytes
        del node.metadata_props[:]
        node.doc_string = ""
    meta = {**provenance, MARK: "1"}
    del out.metadata_props[:]
    for k, v in sorted(meta.items()):
        out.metadata_props.add(key=k, value=str(v))
    return out


def _is_weight(t: Any) -> bool:
    from onnx import TensorProto

    return t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE) and \
        int(np.prod(t.dims)) >= STRIP_MIN_ELEMENTS


def is_structure_only(model: Any) -> bool:
    return any(p.key == MARK for p in model.metadata_props)


def provenance(model: Any) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props if p.key != MARK}


def materialize(model: Any, seed: int = 0) -> Any:
    """A runnable copy of a structure-only model: every stripped initializer filled from `seed` (per tensor
    a generator seeded by (seed, crc32 of its name), so values do not depend on the graph's order)."""
    import onnx
    from onnx import helper, numpy_helper

    roles = _roles(model.graph)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for i, t in enumerate(out.graph.initializer):
        if not _is_stripped(t):
            continue
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        rng = np.random.default_rng([seed, zlib.crc32(t.name.encode())])
        values = _draw(rng, tuple(t.dims), roles.get(t.name, ("", -1, None)))
        out.graph.initializer[i].CopyFrom(numpy_helper.from_array(values.astype(dtype), t.name))
    kept = [p for p in out.metadata_props if p.key != MARK]
    del out.metadata_props[:]
    out.metadata_props.extend(kept)
    out.metadata_props.add(key="leka.weights", value=f"random, seed {seed} (leka.optimize.real_models)")
    return out


def _is_stripped(t: Any) -> bool:
    return _is_weight(t) and not (t.raw_data or t.float_data or t.double_data or t.int32_data or t.external_data)


def _roles(graph: Any) -> dict[str, tuple[str, int, Any]]:
    """initializer name -> (op_type, input index, node) of its first consumer."""
    roles: dict[str, tuple[str, int, Any]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            roles.setdefault(name, (node.op_type, k, node))
    return roles


def _draw(rng: np.random.Generator, shape: tuple[int, ...], role: tuple[str, int, Any]) -> np.ndarray:
    op, k, node = role
    normal = rng.standard_normal(shape)
    if op in ("Conv", "ConvTranspose") and k == 1 and len(shape) > 2:
        return normal * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
    if op == "Gemm" and k == 1 and len(shape) == 2:
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        return normal / np.sqrt(shape[1] if trans_b else shape[0])
    if op == "MatMul" and k == 1 and len(shape) >= 2:
        return normal / np.sqrt(shape[-2])
    if op == "BatchNormalization" and k == 1:  # scale
        return 1.0 + 0.1 * normal
    if op == "BatchNormalization" and k == 4:  # running variance: positive
        return rng.uniform(0.5, 1.5, shape)
    return 0.1 * normal  # biases, batch-norm shift and mean, anything else


def load(name: str, seed: int = 0) -> Any:
    """The bundled model `name`, runnable (weights drawn from `seed`)."""
    import onnx

    from . import OptimizeError

    models = available()
    if name not in models:
        raise OptimizeError(f"unknown bundled real model {name!r}; known: {', '.join(models) or 'none'}")
    return materialize(onnx.load(str(models[name])), seed)


def write(name: str, out_dir: str | Path, seed: int = 0) -> Path:
    import onnx

    path = Path(out_dir) / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(load(name, seed), str(path))
    return path


def _main(argv: list[str]) -> int:
    import argparse

    import onnx

    ap = argparse.ArgumentParser(prog="python -m leka.optimize.real_models",
                                 description="Write the bundled structure-only converter exports as runnable "
                                             "ONNX files (weights drawn from a fixed seed).")
    ap.add_argument("out_dir", nargs="?", help="folder to write NAME.onnx into")
    ap.add_argument("names", nargs="*", help="models to write (default: every one; --list names them)")
    ap.add_argument("--list", action="store_true", help="print the names, converter, opset and input shape")
    args = ap.parse_args(argv)
    if args.list:
        for name, path in available().items():
            print(name, " ".join(f"{k}={v}" for k, v in provenance(onnx.load(str(path))).items()))
        return 0
    if not args.out_dir:
        ap.error("give OUT_DIR (or --list)")
    unknown = [n for n in args.names if n not in available()]
    if unknown:
        ap.error(f"unknown model {unknown[0]!r}; --list names the {len(available())} bundled ones")
    for n in args.names or list(available()):
        print(write(n, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
