"""A complete user task file: copy it, rename the pattern, and pass the folder with --tasks.

    leka bench list     --tasks examples/user_tasks --pattern scaled_tanh
    leka bench validate --tasks examples/user_tasks --task l1-scaled_tanh-1x64x64x32

It defines one workload of a custom "scaled_tanh" pattern, y = a * tanh(b * x) (the LeCun-style
scaled tanh used by some small on-device CNNs), on a 64x64x32 NHWC feature map. Everything a task
needs is here: the TVM definition (TE, built lazily), a vectorised NumPy reference, argument specs,
FLOPs/bytes and a one-line description. Tolerances default by dtype (fp32: rtol 1e-4,
atol 1e-5 * max|reference|).
"""
from __future__ import annotations

import numpy as np

from leka.tasks import ArgSpec, Task

A, B = 1.7159, 2.0 / 3.0   # LeCun 1998, "Efficient BackProp"
SHAPE = (1, 64, 64, 32)


def build():
    """Return the unscheduled PrimFunc: parameters are the task args, inputs first, then outputs."""
    from tvm import te, tirx  # imported here so `leka bench list` stays fast

    X = te.placeholder(SHAPE, "float32", name="X")
    Y = te.compute(SHAPE, lambda *i: tirx.const(A, "float32") * te.tanh(tirx.const(B, "float32") * X(*i)), name="Y")
    return te.create_prim_func([X, Y])          # global_symbol defaults to "main"


def reference(x: np.ndarray) -> np.ndarray:
    return A * np.tanh(B * x.astype(np.float64))  # the task casts it to the output dtype


n = int(np.prod(SHAPE))
TASKS = [
    Task(id="l1-scaled_tanh-1x64x64x32", pattern="scaled_tanh", level=1, domain="vision", dtype="float32",
         layout="NHWC",
         args=(ArgSpec("X", SHAPE, "float32"), ArgSpec("Y", SHAPE, "float32", role="output")),
         build=build, reference=reference,
         flops=6 * n,                            # 2 multiplies + tanh (counted as 4)
         bytes=2 * 4 * n,                        # read X once, write Y once
         description="scaled tanh 1.7159*tanh(2x/3) on a 64x64x32 feature map (user example)"),
]
