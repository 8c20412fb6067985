"""TVM schedule traces (``sch.trace.as_json()``) <-> the schedule and memory layers.

Import replays the trace on a LiveSchedule, translating each instruction into a named Step, so the
result applies to the same module. Memory instructions (cache_*, set_scope, storage_align,
transform_layout) go to the memory layer with "after" = the schedule step they followed.
"""
from __future__ import annotations

import json
from typing import Any

from .candidate import CandidateIR
from .errors import IRApplyError
from .layers import MemoryLayer, ScheduleLayer
from .steps import TENSOR_INTRINSICS, Step

_LOOKUPS = {"GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers", "EnterPostproc"}


def _plain(o: Any) -> Any:
    import tvm

    if isinstance(o, (list, tuple)) or type(o).__name__ == "Array":
        return [_plain(x) for x in o]
    if isinstance(o, (tvm.tirx.IntImm, tvm.tirx.FloatImm)):
        return o.value
    if isinstance(o, str):
        return str(o)
    if isinstance(o, bool) or o is None or isinstance(o, (int, float)):
        return o
    if type(o).__name__ in ("String", "SmallStr"):
        return str(o)
    return o


def export_trace(ir: CandidateIR, func: Any = None) -> list[Any]:
    """The TVM trace (JSON-able lists) that the IR's schedule and memory layers produce."""
    live = ir.apply(func)
    return _plain(live.sch.trace.as_json())


def _permutation(index_map_json: str) -> list[int]:
    import tvm

    imap = tvm.ir.load_json(index_map_json)
    src = [v.name for v in imap.initial_indices]
    perm = []
    for e in imap.final_indices:
        if not hasattr(e, "name") or e.name not in src:
            raise IRApplyError("only permutation layouts import into the memory layer; got index map "
                               f"{imap}")
        perm.append(src.index(e.name))
    return perm


def _parse(trace: Any) -> tuple[list[Any], dict[int, Any]]:
    """A trace's instructions and its decisions by instruction index."""
    if isinstance(trace, str):
        trace = json.loads(trace)
    trace = _plain(trace)
    if not isinstance(trace, list) or not trace or not isinstance(trace[0], list):
        raise IRApplyError("a trace is [[instructions...], [decisions...]]")
    return trace[0], {int(i): v for i, v in (trace[1] if len(trace) > 1 else [])}


class _Replay:
    """Replays trace instructions on a LiveSchedule, collecting named schedule and memory steps."""

    def __init__(self, ir: CandidateIR, decisions: dict[int, Any]):
        self.live = ir.apply()
        self.decisions = decisions
        self.sched: list[Step] = list(ir.schedule.steps)
        self.mem: list[Step] = list(ir.memory.steps)
        self.rv: dict[str, Any] = {}  # trace random variable -> block/loop name or sampled value
        self.pending_cache: tuple[int, str, str] | None = None  # (memory index, new block, "compute_at" kind)

    def name(self, x: Any) -> Any:
        return self.rv.get(x, x) if isinstance(x, str) else x

    def lookup(self, idx: int, kind: str, ins: list[Any], attrs: list[Any], outs: list[Any]) -> bool:
        """Bind the outputs of a lookup or sampling instruction; False when the instruction is neither."""
        if kind == "GetSBlock":
            self.rv[outs[0]] = attrs[0]
        elif kind == "GetLoops":
            self.rv.update(zip(outs, self.live.loops_of(self.name(ins[0]))))
        elif kind == "GetChildBlocks":  # only the root's children are addressable by name here
            self.rv.update(zip(outs, self.live.block_names()))
        elif kind in ("GetProducers", "GetConsumers"):
            pass
        elif kind == "SamplePerfectTile":
            self.rv.update(zip(outs, self.decisions[idx]))
        elif kind == "SampleCategorical":
            self.rv[outs[0]] = attrs[0][int(self.decisions[idx])]
        else:
            return False
        return True

    def _apply(self, idx: int, kind: str, step: Step) -> list[str]:
        try:
            return self.live.apply(step)
        except IRApplyError as e:
            raise IRApplyError(f"trace instruction {idx} ({kind}): {e}") from None

    def _partial(self, loop: str, factors: list[int | None]) -> bool:
        ext, prod = self.live.extent(loop), 1
        for f in factors:
            prod *= f or 1
        return ext is not None and ext % prod != 0

    def step(self, idx: int, kind: str, ins: list[Any], attrs: list[Any], outs: list[Any]) -> None:
        """Translate one primitive into a Step, apply it and record it in its layer."""
        step, layer = _translate(kind, [self.name(x) for x in ins], attrs, ins)
        if step.op == "split" and self._partial(step.args["loop"], step.args["factors"]):
            step = Step("split", {**step.args, "tail": True})  # TVM's non-divisible split: the IR says so
        pending, self.pending_cache = self.pending_cache, None
        if pending and step.op == pending[2] and step.args["block"] == pending[1]:
            # cache_* followed by its (reverse_)compute_at: one memory decision with "at"
            self._apply(idx, kind, step)
            m = self.mem[pending[0]]
            self.mem[pending[0]] = Step(m.op, {**m.args, "at": step.args["loop"], "after": m.args["after"]})
            return
        if layer == "memory":
            step = Step(step.op, {**step.args, "after": len(self.sched) - 1 if self.sched else -1})
        created = self._apply(idx, kind, step)
        (self.mem if layer == "memory" else self.sched).append(step)
        self.rv.update(zip(outs, created))
        if step.op in ("cache_read", "cache_write"):
            self.pending_cache = (len(self.mem) - 1, created[0],
                                  "compute_at" if step.op == "cache_read" else "reverse_compute_at")


def import_trace(task: Any, trace: Any, base: CandidateIR | None = None) -> CandidateIR:
    """Build a CandidateIR from a trace JSON (as produced by ``plain(sch.trace.as_json())`` or export_trace)."""
    insts, decisions = _parse(trace)
    ir = base or CandidateIR.initial(task)
    replay = _Replay(ir, decisions)
    for idx, inst in enumerate(insts):
        kind, ins, attrs, outs = inst
        if kind == "EnterPostproc":
            break
        if not replay.lookup(idx, kind, ins, attrs, outs):
            replay.step(idx, kind, ins, attrs, outs)
    return ir.with_layer("schedule", ScheduleLayer(tuple(replay.sched))) \
        .with_layer("memory", MemoryLayer(tuple(replay.mem)))


def _translate(kind: str, ins: list[Any], attrs: list[Any], raw: list[Any]) -> tuple[Step, str]:
    S = Step
    if kind == "Split":
        return S("split", {"loop": ins[0], "factors": [None if f in ("None", None) else int(f) for f in ins[1:]]}), \
            "schedule"
    if kind in ("Fuse", "Reorder"):
        return S(kind.lower(), {"loops": list(ins)}), "schedule"
    if kind in ("Parallel", "Vectorize", "Unroll"):
        return S(kind.lower(), {"loop": ins[0]}), "schedule"
    if kind == "Bind":
        return S("bind", {"loop": ins[0], "thread": str(attrs[0])}), "schedule"
    if kind in ("ComputeAt", "ReverseComputeAt"):
        op = "compute_at" if kind == "ComputeAt" else "reverse_compute_at"
        return S(op, {"block": ins[0], "loop": ins[1]}), "schedule"
    if kind in ("ComputeInline", "ReverseComputeInline"):
        return S("compute_inline" if kind == "ComputeInline" else "reverse_compute_inline", {"block": ins[0]}), \
            "schedule"
    if kind == "DecomposeReduction":
        return S("decompose_reduction", {"block": ins[0], "loop": ins[1]}), "schedule"
    if kind == "RFactor":
        return S("rfactor", {"loop": ins[0], "factor_axis": int(attrs[0])}), "schedule"
    if kind == "Annotate":
        key, value = str(attrs[0]), ins[1]
        if isinstance(value, str) and value.startswith('"'):
            value = json.loads(value)
        if key == "double_buffer_scope":
            return S("double_buffer", {"block": ins[0]}), "memory"
        return S("annotate", {"target": ins[0], "key": key, "value": value}), "schedule"
    if kind == "Tensorize":
        if str(attrs[0]) not in TENSOR_INTRINSICS:
            raise IRApplyError(f"Tensorize with {attrs[0]!r}: not an allowed tensor intrinsic "
                               "(leka.ir.steps.TENSOR_INTRINSICS)")
        return S("tensorize", {"target": ins[0], "intrin": str(attrs[0])}), "schedule"
    if kind in ("CacheRead", "CacheWrite"):
        if raw[1]:
            raise IRApplyError(f"{kind} restricted to consumer blocks is not supported by the memory layer")
        op = "cache_read" if kind == "CacheRead" else "cache_write"
        return S(op, {"block": ins[0], "buffer": int(attrs[0]), "scope": str(attrs[1]), "at": None}), "memory"
    if kind == "SetScope":
        return S("set_scope", {"block": ins[0], "buffer": int(attrs[0]), "scope": str(attrs[1])}), "memory"
    if kind == "StorageAlign":
        return S("storage_align", {"block": ins[0], "buffer": int(attrs[0]), "axis": int(attrs[1]),
                                   "factor": int(attrs[2]), "offset": int(attrs[3])}), "memory"
    if kind == "TransformLayout":
        access = "read" if int(attrs[1]) == 0 else "write"
        return S("transform_layout", {"block": ins[0], "access": access, "buffer": int(attrs[0]),
                                      "permutation": _permutation(ins[1])}), "memory"
    raise IRApplyError(f"trace instruction {kind} is not supported by the layered IR")
