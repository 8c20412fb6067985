"""Typed steps of the schedule and memory layers: the JSON vocabulary a model writes.

Each step is ``{"op": NAME, ...fields}``. Loops and blocks are referred to by stable names
(see leka/ir/naming.py): a block by its TVM name ("C"), a loop as "<block>.<loop var>" ("C.i"),
and the parts of a split as "<loop>.<n>" ("C.i.0", "C.i.1").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import IRFormatError
from .vnni import VNNI_DOT

# field name -> type tag. "loop"/"block"/"loops" are names; "factors" is a list of positive ints with at most one null;
# "intrin" is one of TENSOR_INTRINSICS.
SCHEDULE_OPS: dict[str, dict[str, str]] = {
    "split": {"loop": "loop", "factors": "factors"},
    "fuse": {"loops": "loops"},
    "reorder": {"loops": "loops"},
    "parallel": {"loop": "loop"},
    "vectorize": {"loop": "loop"},
    "unroll": {"loop": "loop"},
    "bind": {"loop": "loop", "thread": "thread"},
    "compute_at": {"block": "block", "loop": "loop"},
    "reverse_compute_at": {"block": "block", "loop": "loop"},
    "compute_inline": {"block": "block"},
    "reverse_compute_inline": {"block": "block"},
    "decompose_reduction": {"block": "block", "loop": "loop"},
    "annotate": {"target": "name", "key": "str", "value": "scalar"},
    "rfactor": {"loop": "loop", "factor_axis": "int"},
    "tensorize": {"target": "name", "intrin": "intrin"},
}
MEMORY_OPS: dict[str, dict[str, str]] = {
    "cache_read": {"block": "block", "buffer": "int", "scope": "scope", "at": "loop?"},
    "cache_write": {"block": "block", "buffer": "int", "scope": "scope", "at": "loop?"},
    "set_scope": {"block": "block", "buffer": "int", "scope": "scope"},
    "storage_align": {"block": "block", "buffer": "int", "axis": "int", "factor": "int", "offset": "int"},
    "transform_layout": {"block": "block", "access": "access", "buffer": "int", "permutation": "ints"},
    "double_buffer": {"block": "block"},
}
THREADS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread.x",
           "vthread.y", "vthread.z")
SCOPES = ("global", "shared", "shared.dyn", "local", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")
# Tensor intrinsics a tensorize step may name: TVM 0.27's CUDA WMMA family for fp16 inputs (registered by
# tvm.s_tir.tensor_intrin.cuda; 16x16x16 fragments, warp-wide) and LEKA's x86 VNNI dot (leka.ir.vnni). A name
# is never taken from model text as is: only these, which a test checks are registered.
_WMMA = "wmma_{}_16x16x16_"
TENSOR_INTRINSICS = tuple(
    [_WMMA.format("load") + f"f16_{ab}{tr}_{sc}"
     for ab in "ab" for tr in ("", "_trans") for sc in ("shared", "shared_dyn")]
    + [_WMMA.format("sync") + f"f16f16{acc}{tr}" for acc in ("f32", "f16") for tr in ("", "_trans")]
    + [_WMMA.format("fill") + acc for acc in ("f32", "f16")]
    + [_WMMA.format("store") + f"{acc}_{sc}" for acc in ("f32", "f16") for sc in ("shared", "shared_dyn", "global")]
    + [VNNI_DOT])  # x86 AVX-512 VNNI vpdpbusd, 16 int32 lanes x 4 u8*s8 (leka.ir.vnni)
# The annotation that marks a block as a pure layout rewrite of a weight parameter (MetaSchedule's key): the
# model build splits such a block out of its kernel and runs it once on the constant weight
# (leka/optimize/prepack.py); a kernel run whole ignores it.
PREPROC_KEY = "meta_schedule.layout_rewrite_preproc"
# Memory steps may say after which schedule step they apply ("after": index, -1 = before all); default: at the end.
OPTIONAL_FIELDS = {"after"}
# A split may say "tail": true: its factors need not divide the extent, the last outer iteration covers the
# remainder under a predicate (TVM's non-divisible split). Off by default: a factor that does not divide is
# usually a mistake, and the error says so.
SPLIT_TAIL = "tail"


@dataclass(frozen=True)
class Step:
    op: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **self.args}

    def render(self) -> str:
        """Compact one-line form used in summaries and diffs: split(C.i, [None, 32])."""
        parts = []
        for k, v in self.args.items():
            if k in ("loop", "block", "target"):
                parts.append(str(v))
            elif k == "loops":
                parts.append(", ".join(v))
            elif k == "after" and v is None:
                continue
            else:
                parts.append(f"{k}={v}")
        return f"{self.op}({', '.join(parts)})"


def _check_value(where: str, name: str, tag: str, v: Any) -> Any:
    if tag.endswith("?"):
        if v is None:
            return None
        tag = tag[:-1]
    if tag in ("loop", "block", "name", "str"):
        if not isinstance(v, str) or not v:
            raise IRFormatError(f"{where}: field '{name}' must be a non-empty string, got {v!r}")
        return v
    if tag == "loops":
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
            raise IRFormatError(f"{where}: field '{name}' must be a non-empty list of loop names, got {v!r}")
        return list(v)
    if tag == "factors":
        if not isinstance(v, list) or len(v) < 2:
            raise IRFormatError(f"{where}: field 'factors' must be a list of at least 2 entries, got {v!r}")
        for x in v:
            if x is not None and (isinstance(x, bool) or not isinstance(x, int)):
                raise IRFormatError(f"{where}: split factors must be positive integers or null, got {x!r}")
            if x is not None and x < 1:
                raise IRFormatError(f"{where}: split factor {x} must be a positive integer")
        if sum(x is None for x in v) > 1:
            raise IRFormatError(f"{where}: at most one split factor may be null, got {v!r}")
        return list(v)
    if tag == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise IRFormatError(f"{where}: field '{name}' must be an integer, got {v!r}")
        return v
    if tag == "ints":
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise IRFormatError(f"{where}: field '{name}' must be a list of integers, got {v!r}")
        return list(v)
    if tag == "scalar":
        if not isinstance(v, (int, float, str)) or isinstance(v, bool):
            raise IRFormatError(f"{where}: field '{name}' must be an integer, number or string, got {v!r}")
        return v
    if tag == "thread":
        if v not in THREADS:
            raise IRFormatError(f"{where}: thread {v!r} is not one of {', '.join(THREADS)}")
        return v
    if tag == "scope":
        if v not in SCOPES:
            raise IRFormatError(f"{where}: scope {v!r} is not one of {', '.join(SCOPES)}")
        return v
    if tag == "intrin":
        if v not in TENSOR_INTRINSICS:
            raise IRFormatError(f"{where}: intrinsic {v!r} is not an allowed tensor intrinsic; allowed: "
                                f"{', '.join(TENSOR_INTRINSICS)}")
        return v
    if tag == "access":
        if v not in ("read", "write"):
            raise IRFormatError(f"{where}: field 'access' must be \"read\" or \"write\", got {v!r}")
        return v
    raise AssertionError(tag)


def parse_step(d: Any, ops: dict[str, dict[str, str]], where: str) -> Step:
    """Check one JSON step against the op table; raise IRFormatError naming the step and field."""
    if not isinstance(d, dict):
        raise IRFormatError(f"{where}: a step must be a JSON object like {{\"op\": \"split\", ...}}, got {d!r}")
    op = d.get("op")
    if op not in ops:
        raise IRFormatError(f"{where}: unknown op {op!r}; this layer allows: {', '.join(ops)}")
    spec = ops[op]
    optional = OPTIONAL_FIELDS if ops is MEMORY_OPS else {SPLIT_TAIL} if op == "split" else set()
    unknown = set(d) - set(spec) - {"op"} - optional
    if unknown:
        raise IRFormatError(f"{where} ({op}): unknown field(s) {', '.join(sorted(unknown))}; "
                            f"expected: {', '.join(spec)}")
    args: dict[str, Any] = {}
    for name, tag in spec.items():
        if name not in d and not tag.endswith("?"):
            raise IRFormatError(f"{where} ({op}): missing field '{name}'")
        args[name] = _check_value(f"{where} ({op})", name, tag, d.get(name))
    if ops is MEMORY_OPS:
        after = d.get("after")
        if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < -1):
            raise IRFormatError(f"{where} ({op}): field 'after' must be a schedule step index (-1 = before all) "
                                f"or null, got {after!r}")
        args["after"] = after
    if SPLIT_TAIL in d:
        if not isinstance(d[SPLIT_TAIL], bool):
            raise IRFormatError(f"{where} ({op}): field '{SPLIT_TAIL}' must be true or false, got {d[SPLIT_TAIL]!r}")
        if d[SPLIT_TAIL]:
            args[SPLIT_TAIL] = True
    return Step(op, args)


def parse_steps(data: Any, ops: dict[str, dict[str, str]], layer: str) -> list[Step]:
    if isinstance(data, dict) and "steps" in data:
        data = data["steps"]
    if not isinstance(data, list):
        raise IRFormatError(f"{layer} layer must be a JSON list of steps (or {{\"steps\": [...]}}), "
                            f"got {type(data).__name__}")
    return [parse_step(d, ops, f"{layer} step {i}") for i, d in enumerate(data)]
