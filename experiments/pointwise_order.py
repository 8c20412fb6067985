"""Which loop goes outermost in cpu.pointwise_conv's tile: each knob set of the rule timed on 1x1 convolutions of
common CNN shapes (each a Conv + Relu, extracted as `leka optimize` extracts it), alternating in one process,
next to ONNX Runtime running the same one-conv model in the same process.

  python experiments/pointwise_order.py [--rounds 15] [--shapes 512x128x28,64x256x56]

Per shape (C_in x C_out x H=W): the ms of each knob set (channels outer: every channel block streams the whole
input; pixels outer: every pixel block streams the whole weight), which one the rule lists first (knob_order:
what the quick pass and the search's first step take), first/best, the same for the first in KNOBS' own order
(first before knob_order), and ORT. The host is shared: the minimum over rounds.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# 1x1 convolutions whose pixel count the 16-lane vector divides (the rule declines the others), from ResNet-50's
# bottlenecks, MobileNetV2's expansions/projections and a wide one on a small map
SHAPES = ["512x128x28", "512x256x28", "128x512x28", "256x64x56", "64x256x56", "32x16x112", "96x24x56",
          "144x32x28", "1024x256x16"]


def conv_model(ci: int, co: int, hw: int, folder: Path) -> Path:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)
    w = nh.from_array((rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype("float32"), "W")
    b = nh.from_array(rng.standard_normal(co).astype("float32"), "B")
    g = h.make_graph([h.make_node("Conv", ["x", "W", "B"], ["c"]), h.make_node("Relu", ["c"], ["y"])], "pw",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, ci, hw, hw])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, co, hw, hw])], [w, b])
    path = folder / f"pw_{ci}x{co}x{hw}.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), str(path))
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="CINxCOUTxHW, comma-separated")
    a = ap.parse_args()
    from model_kernel_profile import ort_ms, profile_kernel

    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model

    folder = Path(tempfile.mkdtemp())
    from leka.proposers.offline.rules.cpu_pointwise_conv import KNOBS

    print("shape (ci x co x hw) | knobs: ms ... | first listed | first/best | first in KNOBS' order/best | ORT ms")
    for shape in a.shapes.split(","):
        ci, co, hw = (int(v) for v in shape.split("x"))
        path = conv_model(ci, co, hw, folder)
        spec = next(s for s in kernel_specs(import_model(str(path))[1]) if "conv2d" in s.names[0])
        got = profile_kernel(spec, 8, a.rounds, {"cpu.pointwise_conv"})
        knobs = {k.split(" ", 1)[1]: v for k, v in got["times"].items() if k != "default"}
        if not knobs:
            print(f"{shape} | declined | | | {ort_ms(path, a.rounds):.4f}")
            continue
        first, best = next(iter(knobs)), min(knobs.values())
        row = "  ".join(f"{k}: {v:.4f}" for k, v in knobs.items())
        print(f"{shape} | {row} | {first} | {knobs[first] / best:.2f} | {knobs[next(str(k) for k in KNOBS if str(k) in knobs)] / best:.2f} | "
              f"{ort_ms(path, a.rounds):.4f}"
              + (f" | wrong: {got['wrong']}" if got["wrong"] else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
