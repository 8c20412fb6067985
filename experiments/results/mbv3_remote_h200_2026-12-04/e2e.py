"""Both MobileNetV3-small artifacts on the GPU: outputs vs ONNX Runtime's (check/), then latency alternated."""
import sys
import numpy as np
from leka.optimize.runtime import LoadedArtifact

outs = sys.argv[1:]
arts = {o: LoadedArtifact(o) for o in outs}
ins = dict(np.load(f"{outs[0]}/check/inputs.npz"))
for o, a in arts.items():
    exp = dict(np.load(f"{o}/check/expected.npz"))
    got = a.run(dict(np.load(f"{o}/check/inputs.npz")))
    print(o, "max abs error vs ONNX Runtime", max(float(np.abs(got[k] - exp[k]).max()) for k in exp), flush=True)
for rep in range(3):
    print(rep, {o: round(a.median_ms(ins, 300), 4) for o, a in arts.items()}, flush=True)
