"""Both MobileNetV3-small artifacts on the GPU: outputs vs ONNX Runtime's (check/), then latency alternated
over ROUNDS rounds (each artifact 300 runs a round, order swapped every round); the ratio's median and range."""
import statistics
import sys

import numpy as np

from leka.optimize.runtime import LoadedArtifact, check_against_expected

ROUNDS = 9
opt, dlight = sys.argv[1:3]
arts = {o: LoadedArtifact(o) for o in (opt, dlight)}
for o, a in arts.items():
    print(o, "max abs error vs ONNX Runtime", check_against_expected(a, o), flush=True)
ins = dict(np.load(f"{opt}/check/inputs.npz"))
ms: dict[str, list[float]] = {o: [] for o in arts}
for rep in range(ROUNDS):
    order = list(arts) if rep % 2 == 0 else list(arts)[::-1]
    for o in order:
        ms[o].append(arts[o].median_ms(ins, 300))
    print(rep, {o: round(ms[o][-1], 4) for o in arts}, flush=True)
ratios = [d / p for p, d in zip(ms[opt], ms[dlight])]
print(f"opt ms median {statistics.median(ms[opt]):.4f} [{min(ms[opt]):.4f}-{max(ms[opt]):.4f}]; "
      f"dlight ms median {statistics.median(ms[dlight]):.4f} [{min(ms[dlight]):.4f}-{max(ms[dlight]):.4f}]; "
      f"dlight/opt per round median {statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]")
