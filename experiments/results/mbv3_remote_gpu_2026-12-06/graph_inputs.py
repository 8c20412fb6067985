"""A CUDA-graph artifact against the same kernels launched one at a time, on inputs that change between calls:
through LoadedArtifact (device input buffers refilled) and through the VM with a fresh device tensor per call
(a replay that kept an earlier input's pointer or values would disagree on the 2nd and 3rd input)."""
import sys

import numpy as np

from leka.optimize.runtime import LoadedArtifact

graph, plain = LoadedArtifact(sys.argv[1]), LoadedArtifact(sys.argv[2])
import tvm  # noqa: E402  (after LoadedArtifact: the GPU bundle's hook)

name = graph.manifest["inputs"][0]["name"]
shape = graph.manifest["inputs"][0]["shape"]
rng = np.random.default_rng(7)
xs = [rng.standard_normal(shape).astype("float32") * s for s in (1.0, 3.0, 0.1)]
worst = 0.0
for i, x in enumerate(xs):
    a = list(graph.run({name: x}).values())[0]
    b = list(plain.run({name: x}).values())[0]
    out = graph._vm["main"](tvm.runtime.tensor(x, graph.dev))
    fresh = (out if hasattr(out, "numpy") else out[0]).numpy()
    err = max(float(np.abs(a - b).max()), float(np.abs(fresh - b).max()))
    worst = max(worst, err)
    print(f"input {i}: |graph - plain| {np.abs(a - b).max():.3g}, fresh tensor {np.abs(fresh - b).max():.3g}, "
          f"outputs differ from input 0's: {i == 0 or not np.allclose(b, b0)}")
    if i == 0:
        b0 = b
print("OK" if worst < 1e-4 else f"MISMATCH {worst}")
