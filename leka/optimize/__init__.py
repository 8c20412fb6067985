"""`leka optimize`: a whole ONNX model in, a faster deployable artifact out, verified against ONNX Runtime.

Data flow (one module each): importer (ONNX -> fused Relax) -> extract (fused PrimFuncs -> suite Tasks,
deduplicated by structural hash) -> profile (share of the end-to-end time, budget split) -> tune (any
registered method per task, through the evaluator; winners kept in the tuning db) -> build (the model
rebuilt with the winners, in a separate process) -> verify (against ONNX Runtime) -> artifact (OUT/).
"""
from leka.errors import ExitCode, LekaError


class OptimizeError(LekaError):
    """A model, option or output directory that `leka optimize` cannot use (one-line message, exit 2)."""


class VerificationError(LekaError):
    """The optimised build disagrees with ONNX Runtime: nothing is written as a success."""

    exit_code = ExitCode.FAILED


class BuildFailedError(LekaError):
    """The model's build (TVM, in the build job) failed: with winners in it, leka.optimize.fallback drops the
    offending ones; with none, the model itself did not build here (exit 1, not bad input)."""

    exit_code = ExitCode.FAILED


__all__ = ["BuildFailedError", "OptimizeError", "VerificationError"]
