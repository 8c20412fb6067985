"""Shared-memory read-after-write races that TVM's barrier insertion misses, found in lowered GPU TIR.

TVM's ThreadSync pass (run in the default TIR pipeline) puts a `tvm_storage_sync("shared")` between a
shared-memory write and a later read only when the two index expressions differ: "same index means the same
thread". That is false when the write sits under a thread guard. The cross-thread reduction lowering writes
a reduction result into a non-local buffer as `if threadIdx.x == 0: buf[threadIdx.y] = red`, so a later read
`buf[threadIdx.y]` by every lane of the row gets no barrier and lanes 1.. may read the value before lane 0
writes it (or the buffer's previous content). PoCL runs the work-items of a group one after another, so
its OpenCL check passes; the H200 gave wrong outputs (issue 14: seven gpu.fused_rows candidates).

`shared_races(mod)` walks each device function of a lowered module (the output of TVM's default TIR
pipeline, before or after device finalisation) in program order and reports such a read: a shared write
under a condition on a threadIdx variable, then, with no shared barrier between (loops are walked twice, so
a write at the end of an iteration meets a read at the start of the next), a read of the same buffer at a
provably equal index by threads outside that guard, where the index does not name the guard's thread
variable (so more threads read the element than wrote it). Accesses at different indices are left to
ThreadSync, which is conservative there.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SYNC_SCOPES = ("shared", "shared.dyn")


@dataclass(frozen=True, eq=False)  # compared by identity: its fields are TVM objects
class _Write:
    buf: Any  # the allocation written (a view declared over it resolves to it)
    name: str
    index: tuple
    guard: tuple  # the thread-dependent conditions it ran under
    guard_threads: frozenset  # thread tags those conditions name


@dataclass
class _Walk:
    lets: list = field(default_factory=list)  # (let-bound Var, value): CSE temporaries
    aliases: list = field(default_factory=list)  # (declared buffer, the allocation whose data it views)
    analyzer: Any = None
    found: list = field(default_factory=list)


def shared_races(mod: Any) -> list[str]:
    """One message per racy read, for every device function (kernel) of a lowered IRModule."""
    import tvm
    from tvm.sym import Analyzer

    out: list[str] = []
    for gv, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or not _is_device(func):
            continue
        w = _Walk(analyzer=Analyzer())
        _stmt(func.body, w, (), [])
        out += [f"{gv.name_hint}: {m}" for m in dict.fromkeys(w.found)]
    return out


def _is_device(func: Any) -> bool:
    target = func.attrs.get("target") if func.attrs is not None else None
    return target is not None and str(target.kind.name) in ("cuda", "opencl", "vulkan", "metal", "rocm")


def _stmt(s: Any, w: _Walk, guard: tuple, pending: list) -> list:
    """Walk `s` with the writes `pending` since the last barrier; returns the writes pending after it."""
    import tvm
    from tvm import tirx

    if isinstance(s, tirx.SeqStmt):
        for c in s.seq:
            pending = _stmt(c, w, guard, pending)
        return pending
    if isinstance(s, (tirx.Bind, tirx.LetStmt)):
        _reads(s.value, w, guard, pending)
        w.lets.append((s.var, s.value))
        w.analyzer.bind(s.var, s.value)
    elif isinstance(s, tirx.DeclBuffer):
        data = s.data
        if isinstance(data, tvm.ir.Call) and len(data.args) == 1:  # buffer_data(other): a view of it
            w.aliases.append((s.buffer, _root(data.args[0], w)))
        return _stmt(s.body, w, guard, pending) if hasattr(s, "body") else pending
    elif isinstance(s, tirx.BufferStore):
        for e in (s.value, *s.indices):
            _reads(e, w, guard, pending)
        if s.buffer.scope() in SYNC_SCOPES and guard:
            threads = frozenset(t for g in guard for t in _threads(g, w))
            pending = pending + [_Write(_root(s.buffer, w), s.buffer.name, tuple(s.indices), guard, threads)]
    elif isinstance(s, tirx.Evaluate):
        if _is_barrier(s.value):
            return []
        _reads(s.value, w, guard, pending)
    elif isinstance(s, tirx.IfThenElse):
        _reads(s.condition, w, guard, pending)
        cond = (s.condition,) if _threads(s.condition, w) else ()
        after = _stmt(s.then_case, w, guard + cond, pending)
        if s.else_case is not None:
            neg = (tvm.tirx.Not(s.condition),) if cond else ()
            after = after + [x for x in _stmt(s.else_case, w, guard + neg, pending) if all(x is not y for y in after)]
        return after
    elif isinstance(s, (tirx.For, tirx.While)):
        once = _stmt(s.body, w, guard, pending)
        return _stmt(s.body, w, guard, once)  # a second pass meets loop-carried reads
    elif hasattr(s, "body") and isinstance(s.body, tirx.Stmt):  # AttrStmt, allocation/declaration scopes
        return _stmt(s.body, w, guard, pending)
    return pending


def _is_barrier(e: Any) -> bool:
    import tvm

    return (isinstance(e, tvm.ir.Call) and isinstance(e.op, tvm.ir.Op) and e.op.name == "tirx.tvm_storage_sync"
            and len(e.args) > 0 and getattr(e.args[0], "value", None) in SYNC_SCOPES)


def _reads(expr: Any, w: _Walk, guard: tuple, pending: list) -> None:
    """Record a race for each shared load in `expr` that meets a pending guarded write."""
    import tvm
    import tvm_ffi

    if not pending:
        return

    def on_load(load: Any, visitor: Any) -> Any:
        for wr in pending:
            if _root(load.source, w).same_as(wr.buf) and _races(wr, load, w, guard):
                w.found.append(f"shared buffer {wr.name} is written under `{_show(wr.guard)}` and read at the "
                               f"same index by other threads with no barrier between (TVM adds none for an "
                               f"equal index)")
        return visitor.default_visit(load)

    tvm_ffi.structural_visit(expr, [(tvm.ir.TensorLoad, on_load)])


def _races(wr: _Write, load: Any, w: _Walk, guard: tuple) -> bool:
    import tvm_ffi

    if all(any(tvm_ffi.structural_equal(g, h) for h in guard) for g in wr.guard):
        return False  # read by the writing threads themselves
    if len(load.indices) != len(wr.index):
        return False
    if not all(w.analyzer.can_prove_equal(a, b) for a, b in zip(wr.index, load.indices)):
        return False  # different indices: ThreadSync has put a barrier between where one is needed
    named = {t for i in wr.index for t in _threads(i, w)}
    return not wr.guard_threads <= named  # a guarded thread axis the index does not name: more readers


def _threads(expr: Any, w: _Walk, depth: int = 0) -> set[str]:
    """threadIdx tags `expr` depends on, through let-bound temporaries."""
    from tvm.tirx.analysis import undefined_vars

    tags: set[str] = set()
    for v in undefined_vars(expr):
        if v.name.startswith("threadIdx"):
            tags.add(v.name)
        elif depth < 16:
            for var, value in w.lets:
                if var.same_as(v):
                    tags |= _threads(value, w, depth + 1)
    return tags


def _root(buf: Any, w: _Walk) -> Any:
    """The allocation a buffer views (StorageRewrite reuses one allocation under several names)."""
    for view, root in w.aliases:
        if view.same_as(buf):
            return root
    return buf


def _show(guard: tuple) -> str:
    return " and ".join(str(g) for g in guard)


def lowered_races(mod: Any, preset: Any) -> list[str]:
    """shared_races of `mod` (a scheduled IRModule) lowered by TVM's default TIR pipeline for a GPU preset
    (no codegen: ~0.05 s). A module that does not lower gives []: the build reports that failure."""
    import tvm
    from tvm.target import Target

    from .backends.base import as_module, tvm_target

    try:
        mod = as_module(mod["main"])  # the entry needs its global_symbol to lower
        target = Target(tvm_target(preset), host=Target("llvm"))
        pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
        lowered = pipeline(tvm.tirx.transform.BindTarget(target)(mod))
    except Exception:  # noqa: BLE001 - TVM raises many error types; the build reports them
        return []
    return shared_races(lowered)
