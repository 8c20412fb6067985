"""Checks on a scheduled PrimFunc against the task's signature and the target's facts."""
from __future__ import annotations

from typing import Any


def task_args(task: Any) -> list[tuple[str, tuple[int, ...], str]]:
    if isinstance(task, (list, tuple)):  # already (name, shape, dtype) triples (worker side)
        return [(n, tuple(s), d) for n, s, d in task]
    return [(a.name, tuple(a.shape), a.dtype) for a in task.args]


def check_signature(func: Any, task: Any) -> list[str]:
    """Params must match the task's args in order, shape and dtype (inputs then outputs)."""
    want = task_args(task)
    got = []
    for p in func.params:
        shape = tuple(int(x) for x in p.shape) if hasattr(p, "shape") and p.shape is not None else ()
        got.append((p.name, shape, str(p.dtype)))
    if len(got) != len(want):
        return [f"the function has {len(got)} parameter(s) but the task has {len(want)}: "
                f"{', '.join(n for n, _, _ in want)}"]
    errs = []
    for i, ((gn, gs, gd), (wn, ws, wd)) in enumerate(zip(got, want)):
        if gs != ws or gd != wd:
            errs.append(f"parameter {i} ({gn}) is {gd}{list(gs)} but the task's {wn} is {wd}{list(ws)}")
    return errs


def footprint_bytes(mod: Any) -> dict[str, int]:
    """Bytes allocated per storage scope after buffer compaction (tiles count at their compacted size)."""
    import tvm
    from tvm import s_tir

    T = s_tir.transform
    seq = tvm.transform.Sequential([T.LowerInitBlock(), T.PlanAndUpdateBufferAllocationLocation(),
                                    T.ConvertBlocksToOpaque(), T.CompactBufferAllocation(), T.LowerOpaqueBlock()])
    lowered = seq(mod)
    out: dict[str, int] = {}
    for per_scope in s_tir.analysis.calculate_allocated_bytes(lowered["main"]).values():
        for scope, n in per_scope.items():
            out[str(scope)] = out.get(str(scope), 0) + int(n)
    return out


def _bound_blocks(live: Any) -> list[str]:
    """Blocks with no loop bound to a GPU thread/block index (they would run as host code)."""
    unbound = []
    for b in live.block_names():
        loops = [live.sch.get(rv) for rv in live.sch.get_loops(live.sch.get_sblock(b))]
        if not any(lp.thread_binding is not None for lp in loops):
            unbound.append(b)
    return unbound


def _threads_per_block(live: Any) -> int:
    worst = 1
    for b in live.block_names():
        # per thread axis, not per loop: a cooperative fetch nested under the threadIdx loops of its consumer
        # (compute_at of a shared tile) binds threadIdx.x again, the same hardware threads
        per_tag: dict[str, int] = {}
        for rv in live.sch.get_loops(live.sch.get_sblock(b)):
            lp = live.sch.get(rv)
            if lp.thread_binding is not None and lp.thread_binding.thread_tag.startswith("threadIdx"):
                tag = lp.thread_binding.thread_tag
                per_tag[tag] = max(per_tag.get(tag, 1), int(lp.extent) if hasattr(lp.extent, "value") else 1)
        n = 1
        for ext in per_tag.values():
            n *= ext
        worst = max(worst, n)
    return worst


def check_scheduled(live: Any, task: Any, target: Any) -> list[str]:
    from leka.targets import get_target

    preset = get_target(target)
    func = live.sch.mod["main"]
    errs = check_signature(func, task)
    facts = preset.facts or {}
    if preset.family in ("cuda", "opencl"):
        unbound = _bound_blocks(live)
        if unbound:
            errs.append(f"block(s) {', '.join(unbound)} have no loop bound to blockIdx/threadIdx; on a GPU target "
                        f"every block must be bound (bind an outer loop to blockIdx.x and an inner one to threadIdx.x)")
        limit = int(preset.target.get("max_threads_per_block", 1024))
        threads = _threads_per_block(live)
        if threads > limit:
            errs.append(f"{threads} threads per block exceed the target's max_threads_per_block {limit}")
        if not unbound:
            from leka.compiler.races import lowered_races

            errs += [f"shared-memory race: {r}; keep a value every thread reads in a local buffer, or "
                     f"read it where its writer does" for r in lowered_races(live.sch.mod, preset)]
    try:
        fp = footprint_bytes(live.sch.mod)
    except Exception as e:  # the footprint is advisory; a lowering failure will show at compile time
        fp = {}
        errs_note = str(e).strip().splitlines()
        if errs_note and preset.family != "cpu":
            errs.append(f"could not estimate the memory footprint: {errs_note[-1][:200]}")
    shared = sum(v for k, v in fp.items() if k.startswith("shared"))
    shared_limit = facts.get("shared_mem_per_block_bytes") or preset.target.get("max_shared_memory_per_block")
    if shared and preset.family != "cpu" and shared_limit and shared > int(shared_limit):
        errs.append(f"shared-memory footprint {shared} bytes exceeds the target's {int(shared_limit)} bytes per block")
    local = fp.get("local", 0)
    if local and preset.family != "cpu" and local > 64 * 1024:
        errs.append(f"local (register) footprint {local} bytes per thread block is over 65536 bytes; use smaller tiles")
    regs = preset.target.get("registers_per_block")
    if local and regs and preset.family in ("cuda", "opencl"):
        # a local buffer lives in registers, one copy per thread: 4 bytes per 32-bit register
        need = local // 4 * _threads_per_block(live)
        if need > int(regs):
            errs.append(f"local accumulators need ~{need} registers per block ({local} bytes x "
                        f"{_threads_per_block(live)} threads) over the target's registers_per_block {int(regs)}")
    budget = getattr(task, "memory_budget_bytes", None) or facts.get("memory_budget_bytes")
    if budget:
        args_bytes = sum(_nbytes(s, d) for _, s, d in task_args(task))
        total = args_bytes + sum(fp.values())
        if total > int(budget):
            errs.append(f"estimated memory footprint {total} bytes (arguments {args_bytes} + intermediates "
                        f"{total - args_bytes}) exceeds the memory budget of {int(budget)} bytes")
    return errs


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    import numpy as np

    n = 1
    for x in shape:
        n *= int(x)
    return n * np.dtype(dtype).itemsize
