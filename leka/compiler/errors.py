"""Compiler errors: one line for the CLI and the evaluator's `error` field."""
from leka.errors import LekaError


class CompileError(LekaError):
    """TVM could not build the module for the target (message: TVM's first meaningful line)."""
