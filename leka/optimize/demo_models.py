"""Deployable ONNX models built with onnx.helper (no downloads): the suite's L3 graph builders, with their
weights turned from graph inputs into initializers (constants, as a converter exports a trained model).

  python -m leka.optimize.demo_models OUT_DIR [NAME ...]      # writes OUT_DIR/NAME.onnx
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np


def _builders() -> dict[str, Callable[[], Any]]:
    from benchmark import l3_mobile_blocks as mb
    from benchmark import l3_tinyml as tiny

    from . import cnn_models as cnn

    return {"kws-dscnn": tiny.ds_cnn_kws, "vww-mobilenetv1-025": tiny.mobilenet_v1_vww, "ic-resnet8": tiny.resnet8,
            "ad-autoencoder": tiny.fc_autoencoder(1), "squeezenet-mini": cnn.squeezenet_mini,
            "mobilenet-blocks": cnn.mobilenet_blocks, "mbv2-ir-s1": mb.mbv2_inverted_residual(24, 56, 6, 24, 1)}


MODELS = ("kws-dscnn", "vww-mobilenetv1-025", "ic-resnet8", "ad-autoencoder", "squeezenet-mini", "mobilenet-blocks")


def deployable(build_graph: Callable[[], Any], seed: int = 0) -> Any:
    """The graph's ONNX model with every weight input replaced by a He-scaled constant initializer."""
    import onnx
    from onnx import numpy_helper

    g, outputs = build_graph()
    model = g.model(outputs)
    rng = np.random.default_rng(seed)
    keep, inits = [], []
    for vi in model.graph.input:
        scale = g.weight_scale.get(vi.name)
        if scale is None:
            keep.append(vi)
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        w = 1.0 + 0.1 * rng.standard_normal(shape) if scale < 0 else rng.standard_normal(shape) * scale
        inits.append(numpy_helper.from_array(w.astype(np.float32), vi.name))
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.graph.initializer.extend(inits)
    onnx.checker.check_model(model)
    return model


def write(name: str, out_dir: str | Path, seed: int = 0) -> Path:
    import onnx

    builders = _builders()
    if name not in builders:
        from . import OptimizeError

        raise OptimizeError(f"unknown demo model {name!r}; known: {', '.join(builders)}")
    path = Path(out_dir) / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(deployable(builders[name], seed), str(path))
    return path


if __name__ == "__main__":
    names = sys.argv[2:] or list(MODELS)
    for n in names:
        print(write(n, sys.argv[1]))
