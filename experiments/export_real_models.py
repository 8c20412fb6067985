"""Regenerate benchmark/models/*.structure.onnx: torchvision CNNs (random weights, weights=None) exported by
real converters at old and new opsets, stored structure-only (leka/optimize/real_models.py strips the weight
values; the loader draws them from a fixed seed).

Converters: torch.onnx's TorchScript exporter (dynamo=False; opsets 9-17) and its dynamo exporter
(dynamo=True, onnxscript; opset 18+). Each file records converter, versions, opset, source model and input
shape in its metadata. Needs torch + torchvision + onnxscript, which the project does not depend on: use a
separate environment, e.g.

  python -m venv /tmp/torch-env && /tmp/torch-env/bin/pip install torch torchvision onnxscript onnx
  PYTHONPATH=. /tmp/torch-env/bin/python experiments/export_real_models.py [--only resnet18,...]
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (torchvision builder, input side, export variants as (converter, opset)); sides are small where the
# architecture allows (Inception v3 needs >= 75), to keep the default builds cheap on a 2-core host.
MODELS = {
    "squeezenet1_0": (64, [("torchscript", 9)]),
    "squeezenet1_1": (64, [("torchscript", 9), ("dynamo", 18)]),
    "inception_v3": (75, [("torchscript", 11), ("dynamo", 18)]),
    "googlenet": (64, [("torchscript", 9), ("dynamo", 20)]),
    "resnet18": (64, [("torchscript", 9), ("dynamo", 18)]),
    "mobilenet_v2": (64, [("torchscript", 11), ("dynamo", 18)]),
    "mobilenet_v3_small": (64, [("torchscript", 13), ("dynamo", 21)]),
    "shufflenet_v2_x0_5": (64, [("torchscript", 11), ("dynamo", 18)]),
    "regnet_x_400mf": (64, [("torchscript", 13)]),  # grouped convolutions (group width 16)
}


def export(name: str, side: int, converter: str, opset: int):
    import torch
    import torchvision

    kwargs = {"aux_logits": False, "init_weights": True} if name in ("inception_v3", "googlenet") else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    x = torch.zeros(1, 3, side, side)
    names = {"input_names": ["input"], "output_names": ["logits"]}
    if converter == "torchscript":
        buf = io.BytesIO()
        torch.onnx.export(model, (x,), buf, opset_version=opset, dynamo=False, **names)
        import onnx

        return onnx.load_from_string(buf.getvalue())
    return torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, **names).model_proto


def main() -> int:
    import onnx
    import onnxscript
    import torch
    import torchvision

    from leka.optimize.real_models import MODEL_DIR, SUFFIX, strip

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated torchvision names (default: all)")
    args = ap.parse_args()
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    for name, (side, variants) in MODELS.items():
        if args.only and name not in args.only.split(","):
            continue
        for converter, opset in variants:
            proto = export(name, side, converter, opset)
            got = max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
            prov = {"converter": f"torch.onnx ({converter})", "torch": torch.__version__,
                    "torchvision": torchvision.__version__, "onnx": onnx.__version__,
                    "source": f"torchvision.models.{name}(weights=None)", "opset": str(got),
                    "input": f"input=1x3x{side}x{side}"}
            if converter == "dynamo":
                prov["onnxscript"] = onnxscript.__version__
            path = MODEL_DIR / f"{name}-{converter}-op{got}{SUFFIX}"
            onnx.save(strip(proto, prov), str(path))
            print(f"{path.relative_to(ROOT)}: opset {got} (asked {opset}), {len(proto.graph.node)} nodes, "
                  f"{path.stat().st_size / 1024:.0f} KiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
