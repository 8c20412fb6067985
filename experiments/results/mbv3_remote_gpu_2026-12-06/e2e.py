"""MobileNetV3-small artifacts on the GPU: each one's outputs vs ONNX Runtime's (check/), then latency alternated
over ROUNDS rounds (each artifact 300 runs a round, numpy in and out, the order rotated every round); per artifact
the median and range, and each one's ratio to the first (the dlight build) per round."""
import statistics
import sys

import numpy as np

from leka.optimize.runtime import LoadedArtifact, check_against_expected

ROUNDS = 9
paths = sys.argv[1:]
arts = {p: LoadedArtifact(p) for p in paths}
for p, a in arts.items():
    print(p, "max abs error vs ONNX Runtime", check_against_expected(a, p), flush=True)
ins = dict(np.load(f"{paths[0]}/check/inputs.npz"))
ms: dict[str, list[float]] = {p: [] for p in paths}
for rep in range(ROUNDS):
    order = paths[rep % len(paths):] + paths[:rep % len(paths)]
    for p in order:
        ms[p].append(arts[p].median_ms(ins, 300))
    print(rep, {p: round(ms[p][-1], 4) for p in paths}, flush=True)
base = paths[0]
for p in paths:
    ratios = [b / x for b, x in zip(ms[base], ms[p])]
    print(f"{p}: median {statistics.median(ms[p]):.4f} ms [{min(ms[p]):.4f}-{max(ms[p]):.4f}]; "
          f"{base} / this per round: median {statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]")
