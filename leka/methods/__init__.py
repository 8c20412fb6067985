"""Methods: named ways of producing kernels for a task (baselines, the LEKA agent, others)."""
from .base import (Method, MethodContext, MethodNotApplicable, Sample, UnknownMethodError, evaluate_source,
                   get_method, list_methods, register_method)

__all__ = ["Method", "MethodContext", "MethodNotApplicable", "Sample", "UnknownMethodError", "evaluate_source",
           "get_method", "list_methods", "register_method"]
