"""The layered candidate IR: algorithm / schedule / memory over a task's definition (see docs/ir.md)."""
from __future__ import annotations

from .candidate import LAYERS, CandidateIR
from .errors import IRApplyError, IRFormatError
from .layers import AlgorithmLayer, MemoryLayer, ScheduleLayer
from .steps import MEMORY_OPS, SCHEDULE_OPS, Step
from .trace_io import export_trace, import_trace

__all__ = ["LAYERS", "CandidateIR", "IRApplyError", "IRFormatError", "AlgorithmLayer", "ScheduleLayer",
           "MemoryLayer", "Step", "SCHEDULE_OPS", "MEMORY_OPS", "export_trace", "import_trace"]
