"""Errors of the layered IR: one line each, worded so they can be handed back to a model verbatim."""
from __future__ import annotations

from leka.errors import LekaError


class IRApplyError(LekaError):
    """A layer does not apply to its task/target (bad name, bad factor, TVM refused a primitive ...)."""


class IRFormatError(IRApplyError):
    """A layer's JSON form is malformed (unknown op, missing field, wrong type)."""
