"""A tvm.s_tir.Schedule that keeps stable, model-writable names for its blocks and loops.

Names: a block keeps TVM's name ("C", "C_global", "C_init"); a loop is "<block>.<loop var>" from the
block that first owns it ("C.i"); a split of loop L gives "L.0", "L.1", ...; a fuse gives the parts
joined with "+" ("C.i.0+C.j.0"). Loops created by TVM itself (compute_at, cache_*, decompose_reduction,
rfactor) get "<innermost block>.<loop var>" on the next rescan, deduplicated with "#n".
"""
from __future__ import annotations

from typing import Any, Callable

from .errors import IRApplyError
from .intrinsics import register_tensor_intrinsics
from .steps import Step


def _short(msg: str) -> str:
    """TVM's ScheduleError text, trimmed to the sentence a model can act on."""
    text = str(msg).split("Error message:")[-1].strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("File ", "^"))]
    for ln in lines:
        ln = ln.removeprefix("ScheduleError: ").removeprefix("tvm.error.InternalError: ")
        if ln and not ln.startswith(("Traceback", "tvm.", "note:")):
            return ln
    return lines[-1] if lines else "TVM rejected the primitive"


def _realizes(stmt: Any):
    """SBlockRealize nodes under a statement (TVM 0.27 has no Python stmt visitor for s_tir)."""
    kind = type(stmt).__name__
    if kind == "SBlockRealize":
        yield stmt
        yield from _realizes(stmt.block.body)
    elif kind == "SeqStmt":
        for s in stmt.seq:
            yield from _realizes(s)
    elif kind == "IfThenElse":
        yield from _realizes(stmt.then_case)
        if stmt.else_case is not None:
            yield from _realizes(stmt.else_case)
    elif hasattr(stmt, "body"):
        yield from _realizes(stmt.body)


class LiveSchedule:
    def __init__(self, func: Any):
        from tvm import s_tir

        self.sch = s_tir.Schedule(func, error_render_level="fast")
        self.loops: list[tuple[str, Any]] = []  # (name, LoopRV), in nest order per block
        self.rescan()

    # ---- naming ----------------------------------------------------------------------------
    def block_names(self) -> list[str]:
        root = self.sch.get_sblock("root")
        return [self.sch.get(b).name_hint for b in self.sch.get_child_blocks(root)]

    def _alive(self) -> list[tuple[str, Any]]:
        """(name, sref) of named loops still in the IR (a split/fuse removes its inputs)."""
        out = []
        for name, rv in self.loops:
            try:
                out.append((name, self.sch.get_sref(rv)))
            except Exception:  # "The loop no longer exists in the IRModule"
                continue
        return out

    def _find(self, rv: Any, alive: list[tuple[str, Any]] | None = None) -> str | None:
        sref = self.sch.get_sref(rv)
        for name, old in (alive if alive is not None else self._alive()):
            if old.same_as(sref):
                return name
        return None

    def rescan(self, fresh: dict[str, Any] | None = None) -> None:
        """Re-derive the name table from the current IR, keeping names of loops that survived."""
        fresh = fresh or {}
        new: list[tuple[str, Any]] = []
        new_srefs: list[Any] = []  # srefs of `new`, kept: each get_sref is a type-checked TVM call
        taken: set[str] = set()
        fresh_srefs = [(n, self.sch.get_sref(rv)) for n, rv in fresh.items()]
        alive = self._alive()
        for bname in self.block_names():
            for rv in self.sch.get_loops(self.sch.get_sblock(bname)):
                sref = self.sch.get_sref(rv)
                if any(s.same_as(sref) for s in new_srefs):
                    continue  # shared loop, already named through an earlier block
                name = next((n for n, s in fresh_srefs if s.same_as(sref)), None) or self._find(rv, alive)
                if name is None or name in taken:
                    base = f"{bname}.{self.sch.get(rv).loop_var.name}"
                    name, n = base, 1
                    while name in taken:
                        name = f"{base}#{n}"
                        n += 1
                taken.add(name)
                new.append((name, rv))
                new_srefs.append(sref)
        self.loops = new

    def loop(self, name: str) -> Any:
        for n, rv in self.loops:
            if n == name:
                return rv
        block = name.split(".")[0]
        own = [n for n, _ in self.loops if n.startswith(block + ".")]
        hint = f"loops of block {block}: {', '.join(own)}" if own else f"loops: {', '.join(n for n, _ in self.loops)}"
        raise IRApplyError(f"no loop named {name!r}; {hint}")

    def block(self, name: str) -> Any:
        names = self.block_names()
        if name not in names:
            raise IRApplyError(f"no block named {name!r}; blocks: {', '.join(names)}")
        return self.sch.get_sblock(name)

    def extent(self, name: str) -> int | None:
        ext = self.sch.get(self.loop(name)).extent
        return int(ext) if hasattr(ext, "value") else None

    def loops_of(self, block: str) -> list[str]:
        alive = self._alive()
        return [self._find(rv, alive) or "?" for rv in self.sch.get_loops(self.block(block))]

    def describe(self) -> str:
        """Loop nest per block: 'C: C.i.0(8) C.j.0(4) ...' — what a prompt shows as the current state."""
        lines = []
        alive = self._alive()
        for b in self.block_names():
            parts = []
            for rv in self.sch.get_loops(self.sch.get_sblock(b)):
                loop = self.sch.get(rv)
                kind = {1: " parallel", 2: " vectorized", 3: " unrolled", 4: " bound"}.get(int(loop.kind), "")
                thread = f" {loop.thread_binding.thread_tag}" if loop.thread_binding is not None else ""
                ext = loop.extent.value if hasattr(loop.extent, "value") else loop.extent
                parts.append(f"{self._find(rv, alive)}({ext}{kind}{thread})")
            lines.append(f"{b}: {' '.join(parts) if parts else '(no loops)'}")
        return "\n".join(lines)

    def reducing_blocks(self, loop_name: str) -> list[str]:
        """Blocks under the loop whose reduction iterators are bound through the loop's variable."""
        loop = self.sch.get(self.loop(loop_name))
        from tvm.tirx.analysis import undefined_vars

        out = []
        for realize in _realizes(loop.body):
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                if int(iv.iter_type) == 2 and any(v.same_as(loop.loop_var) for v in undefined_vars(value)):
                    out.append(realize.block.name_hint)
                    break
        return out

    def _require_spatial(self, loop_name: str, op: str) -> None:
        red = self.reducing_blocks(loop_name)
        if red:
            raise IRApplyError(f"loop {loop_name} is a reduction loop of block {red[0]}; {op} needs a spatial loop")

    # ---- applying steps ---------------------------------------------------------------------
    def apply(self, step: Step) -> list[str]:
        """Apply one step; return the names it created. Raises IRApplyError with a one-line reason."""
        from tvm import s_tir

        try:
            created = self._apply(step)
        except s_tir.ScheduleError as e:
            raise IRApplyError(_short(str(e))) from None
        except IRApplyError:
            raise
        except Exception as e:  # TVM raises plain TVMError/ValueError for some misuse
            raise IRApplyError(_short(str(e)) or type(e).__name__) from None
        return created

    def _apply(self, s: Step) -> list[str]:
        handler = _HANDLERS.get(s.op)
        if handler is None:
            raise IRApplyError(f"unknown op {s.op!r}")
        created = handler(self, s.op, s.args)
        if created is None:  # the step made no new names; loops it moved are renamed on rescan
            self.rescan()
            return []
        return created

    # One method per op (or family of ops): returns the names it created, or None for "rescan, none".
    def _split(self, op: str, a: dict[str, Any]) -> list[str]:
        ext = self.extent(a["loop"])
        given = [f for f in a["factors"] if f is not None]
        prod = 1
        for f in given:
            prod *= f
        if ext is not None:
            if None not in a["factors"] and prod != ext:
                raise IRApplyError(f"loop {a['loop']} has extent {ext}; split factors {a['factors']} "
                                   f"multiply to {prod}, not {ext}")
            if ext % prod and not a.get("tail"):
                what = (f"split factor {given[0]} does not divide it" if len(given) == 1 else
                        f"split factors {given} (product {prod}) do not divide it")
                raise IRApplyError(f"loop {a['loop']} has extent {ext}; {what}")
        rvs = self.sch.split(self.loop(a["loop"]), factors=a["factors"], preserve_unit_iters=True)
        names = [f"{a['loop']}.{i}" for i in range(len(rvs))]
        self.rescan(dict(zip(names, rvs)))
        return names

    def _fuse(self, op: str, a: dict[str, Any]) -> list[str]:
        name = "+".join(a["loops"])
        rv = self.sch.fuse(*[self.loop(n) for n in a["loops"]], preserve_unit_iters=True)
        self.rescan({name: rv})
        return [name]

    def _reorder(self, op: str, a: dict[str, Any]) -> None:
        self.sch.reorder(*[self.loop(n) for n in a["loops"]])

    def _loop_kind(self, op: str, a: dict[str, Any]) -> None:
        if op != "unroll":
            self._require_spatial(a["loop"], op)
        getattr(self.sch, op)(self.loop(a["loop"]))

    def _bind(self, op: str, a: dict[str, Any]) -> None:
        self.sch.bind(self.loop(a["loop"]), a["thread"])

    def _compute_at(self, op: str, a: dict[str, Any]) -> None:
        getattr(self.sch, op)(self.block(a["block"]), self.loop(a["loop"]), preserve_unit_loops=True)

    def _inline(self, op: str, a: dict[str, Any]) -> None:
        block = self.block(a["block"])
        if op == "reverse_compute_inline":
            # TVM 0.27 accepts a producer that other blocks still read and leaves them a dangling buffer
            # (an ill-formed function: a GELU epilogue reads the bias add twice, the divide is inlined)
            for prod in self.sch.get_producers(block):
                others = [c for c in self.sch.get_consumers(prod) if not self.sch.get(c).same_as(self.sch.get(block))]
                if others:
                    raise IRApplyError(f"reverse_compute_inline of {a['block']}: its producer "
                                       f"{self.sch.get(prod).name_hint} is also read by "
                                       f"{self.sch.get(others[0]).name_hint}")
        getattr(self.sch, op)(block)

    def _decompose_reduction(self, op: str, a: dict[str, Any]) -> list[str]:
        init = self.sch.decompose_reduction(self.block(a["block"]), self.loop(a["loop"]))
        self.rescan()
        return [self.sch.get(init).name_hint]

    def _block_or_loop(self, name: str) -> Any:
        return self.block(name) if name in self.block_names() else self.loop(name)

    def _annotate(self, op: str, a: dict[str, Any]) -> None:
        self.sch.annotate(self._block_or_loop(a["target"]), a["key"], a["value"])

    def _rfactor(self, op: str, a: dict[str, Any]) -> list[str]:
        rf = self.sch.rfactor(self.loop(a["loop"]), a["factor_axis"])
        self.rescan()
        return [self.sch.get(rf).name_hint]

    def _tensorize(self, op: str, a: dict[str, Any]) -> None:
        register_tensor_intrinsics()  # the CUDA WMMA / x86 VNNI tables, once per process
        self.sch.tensorize(self._block_or_loop(a["target"]), a["intrin"], preserve_unit_iters=True)

    def _cache(self, op: str, a: dict[str, Any]) -> list[str]:
        sch = self.sch
        blk = self.block(a["block"])
        n_bufs = len(sch.get(blk).reads if op == "cache_read" else sch.get(blk).writes)
        if not 0 <= a["buffer"] < n_bufs:
            kind = "reads" if op == "cache_read" else "writes"
            raise IRApplyError(f"block {a['block']} {kind} {n_bufs} buffer(s); buffer index {a['buffer']} "
                               f"is out of range")
        new = getattr(sch, op)(blk, a["buffer"], a["scope"])
        if a.get("at"):
            at = self.loop(a["at"])
            if op == "cache_read":
                sch.compute_at(new, at, preserve_unit_loops=True)
            else:
                sch.reverse_compute_at(new, at, preserve_unit_loops=True)
        self.rescan()
        return [sch.get(new).name_hint]

    def _set_scope(self, op: str, a: dict[str, Any]) -> None:
        self.sch.set_scope(self.block(a["block"]), a["buffer"], a["scope"])

    def _storage_align(self, op: str, a: dict[str, Any]) -> None:
        self.sch.storage_align(self.block(a["block"]), a["buffer"], a["axis"], a["factor"], a["offset"])

    def _transform_layout(self, op: str, a: dict[str, Any]) -> None:
        perm = a["permutation"]
        if sorted(perm) != list(range(len(perm))):
            raise IRApplyError(f"permutation {perm} is not a permutation of 0..{len(perm) - 1}")
        from tvm.tirx import IndexMap

        imap = IndexMap.from_func(lambda *idx: [idx[p] for p in perm], ndim=len(perm))
        self.sch.transform_layout(self.block(a["block"]), (a["access"], a["buffer"]), imap)

    def _double_buffer(self, op: str, a: dict[str, Any]) -> None:
        self.sch.annotate(self.block(a["block"]), "double_buffer_scope", 0)


_HANDLERS: dict[str, Callable[[LiveSchedule, str, dict[str, Any]], list[str] | None]] = {
    "split": LiveSchedule._split,
    "fuse": LiveSchedule._fuse,
    "reorder": LiveSchedule._reorder,
    "parallel": LiveSchedule._loop_kind,
    "vectorize": LiveSchedule._loop_kind,
    "unroll": LiveSchedule._loop_kind,
    "bind": LiveSchedule._bind,
    "compute_at": LiveSchedule._compute_at,
    "reverse_compute_at": LiveSchedule._compute_at,
    "compute_inline": LiveSchedule._inline,
    "reverse_compute_inline": LiveSchedule._inline,
    "decompose_reduction": LiveSchedule._decompose_reduction,
    "annotate": LiveSchedule._annotate,
    "rfactor": LiveSchedule._rfactor,
    "tensorize": LiveSchedule._tensorize,
    "cache_read": LiveSchedule._cache,
    "cache_write": LiveSchedule._cache,
    "set_scope": LiveSchedule._set_scope,
    "storage_align": LiveSchedule._storage_align,
    "transform_layout": LiveSchedule._transform_layout,
    "double_buffer": LiveSchedule._double_buffer,
}
