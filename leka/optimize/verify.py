"""End-to-end verification: the optimised build against ONNX Runtime on several random inputs.

Inputs come from more than one distribution (the evaluator's trial distributions); ONNX Runtime runs here,
the optimised build in the build job's process. Tolerances are dtype-aware (the evaluator's comparison:
atol scales with the output's magnitude); float32 gets the graph-level tolerance of the suite's L3 tasks
because kernels reassociate sums. Any disagreement raises VerificationError naming the output and error.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from leka.evaluator.correctness import compare
from leka.tasks.task import ArgSpec, generate

from . import VerificationError

if TYPE_CHECKING:  # the runtime side (leka run --check) imports this module without the importer
    from .importer import LoadedModel

DISTS = ("normal", "uniform", "heavy", "positive")
# (rtol, atol_scale) by output dtype: graph-level reassociation for floats, exact integers.
TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-6, 1e-7), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}


def input_sets(loaded: "LoadedModel", n_sets: int = 4, seed: int = 0) -> list[list[np.ndarray]]:
    """`n_sets` input sets, cycling through DISTS (integers: the ArgSpec defaults)."""
    rng = np.random.default_rng(seed)
    specs = [ArgSpec(i.name, i.shape, i.dtype) for i in loaded.inputs]
    return [[generate(s, rng, DISTS[k % len(DISTS)]) for s in specs] for k in range(n_sets)]


def ort_outputs(loaded: "LoadedModel", sets: list[list[np.ndarray]], threads: int = 2) -> list[list[np.ndarray]]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(loaded.model.SerializeToString(), sess_options=opts,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in loaded.inputs]
    return [list(sess.run(None, dict(zip(names, s)))) for s in sets]


def check(loaded: "LoadedModel", expected: list[list[np.ndarray]], got: dict[str, np.ndarray]) -> dict[str, Any]:
    """Compare every set and output; returns a summary, raises VerificationError on a mismatch."""
    worst: dict[str, float] = {}
    for s, exp_set in enumerate(expected):
        for i, (name, exp) in enumerate(zip(loaded.outputs, exp_set)):
            out = got.get(f"{s}:{i}")
            if out is None:
                raise VerificationError(f"the optimised build returned no output {name!r} (input set {s})")
            rtol, atol = TOLERANCES.get(str(exp.dtype), (0.0, 0.0))
            v = compare(name, np.asarray(out).reshape(exp.shape) if out.size == exp.size else out, exp, rtol, atol)
            worst[name] = max(worst.get(name, 0.0), v.max_abs_err)
            if not v.ok:
                raise VerificationError(
                    f"optimised build disagrees with ONNX Runtime on output {name!r} (input set {s}, "
                    f"{DISTS[s % len(DISTS)]} inputs): max abs error {v.max_abs_err:.3g}; {v.reason}")
    return {"sets": len(expected), "distributions": [DISTS[s % len(DISTS)] for s in range(len(expected))],
            "max_abs_err": worst, "tolerances": {str(e.dtype): TOLERANCES.get(str(e.dtype), (0.0, 0.0))
                                                 for e in expected[0]}}
