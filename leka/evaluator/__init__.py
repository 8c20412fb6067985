"""The evaluator: isolated, honest correctness and timing of candidate kernels (see evaluate.py)."""
from .config import FAILURES, EvalConfig
from .evaluate import BASELINES, Evaluator
from .result import EvalResult, Mismatch, candidate_hash, versions

__all__ = ["BASELINES", "EvalConfig", "EvalResult", "Evaluator", "FAILURES", "Mismatch", "candidate_hash",
           "versions"]
