"""Baseline schedules: "naive" (no schedule on CPU; one thread per output element on GPU) and "dlight"."""
from __future__ import annotations

from typing import Any

from leka.errors import LekaError
from leka.targets import TargetPreset, get_target

from .backends.base import ENTRY, as_module

RULE_SETS = ("naive", "dlight")
NAIVE_THREADS = 256  # threads per block of the naive GPU binding (well under every preset's limit)


def default_schedule(func, target: TargetPreset | str | dict, rules: str = "naive"):
    """Schedule `func` (PrimFunc or IRModule with "main") with a baseline rule set.

    Returns an IRModule, or None when `rules="dlight"` and no dlight rule applies to the function
    (callers then say "dlight does not apply; falls back to naive").
    """
    import tvm

    if rules not in RULE_SETS:
        raise LekaError(f"unknown schedule rules {rules!r}; known: {', '.join(RULE_SETS)}")
    preset = get_target(target)
    mod = as_module(func)
    if rules == "naive":
        return mod if preset.family == "cpu" else _naive_gpu(mod, preset)
    out = apply_dlight(mod, tvm.target.Target(preset.target), preset.family)
    f = out[ENTRY]
    if f.attrs is None or not f.attrs.get("tirx.is_scheduled", False):
        return None
    return out


def baseline_module(func, target: TargetPreset | str | dict, name: str) -> tuple[str, Any]:
    """(label, IRModule) of a named baseline ("tvm-naive" or "tvm-dlight"): where dlight has no rule for the
    function, its default is the naive lowering, labelled "tvm-dlight(naive)"."""
    rules = name.split("-", 1)[1] if name.startswith("tvm-") else name
    if rules not in RULE_SETS:
        raise LekaError(f"unknown baseline {name!r}; known: {', '.join('tvm-' + r for r in RULE_SETS)}")
    mod = default_schedule(func, target, rules=rules)
    if mod is None:
        return f"{name}(naive)", default_schedule(func, target, rules="naive")
    return name, mod


def dlight_rules(family: str) -> list[Any]:
    """dlight's default rules for a target family; on GPU Fallback is last (a generic binding when no pattern
    rule fits)."""
    from tvm.s_tir import dlight as dl

    if family == "cpu":
        return [dl.cpu.GEMV(), dl.cpu.Reduction()]
    return [dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback()]


def apply_dlight(mod: Any, target: Any, family: str) -> Any:
    """dlight's default rules on every PrimFunc of `mod` that is not scheduled yet, as ApplyDefaultSchedule
    does, one function at a time: a rule that raises does not apply (0.27's cpu.Reduction raises "The block
    ... is an output block" on AlexNet's fc+relu+copy kernels, which failed whole model builds), and a function
    no rule schedules stays as it is. `target`: a tvm Target."""
    import tvm

    rules = dlight_rules(family)
    out = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    with target:
        for gv, f in mod.functions_items():
            if isinstance(f, tvm.tirx.PrimFunc) and not (f.attrs is not None and f.attrs.get("tirx.is_scheduled", False)):
                scheduled = _first_rule(rules, f, target)
                if scheduled is not None:
                    out[gv] = scheduled.with_attr("tirx.is_scheduled", True)
    return out


def _first_rule(rules, func, target):
    """dlight's ApplyDefaultSchedule loop, except that a rule that raises counts as "does not apply"
    (0.27's gpu.Matmul asserts on some fp16 patterns) so the next rule still gets its chance."""
    for rule in rules:
        try:
            space = rule.apply(func, target, False)
        except Exception:  # noqa: BLE001 - a buggy rule must not take the baseline down
            continue
        if space is None:
            continue
        sch = space[0] if isinstance(space, list) else space
        return sch.mod["main"]
    return None


def _naive_gpu(mod, preset: TargetPreset):
    """TVM's DefaultGPUSchedule; where it fails (0.27 rejects functions with several blocks:
    "Duplicated block name root") the same binding done by hand: for each top-level block, fuse its
    leading data-parallel loops and split them over blockIdx.x/threadIdx.x; reductions stay serial."""
    import tvm
    from tvm import s_tir

    try:
        with tvm.target.Target(preset.target):
            return s_tir.transform.DefaultGPUSchedule()(mod)
    except Exception:  # noqa: BLE001 - fall back to the hand binding below
        pass
    sch = s_tir.Schedule(mod)
    max_threads = int(preset.target.get("max_threads_per_block", 1024))
    threads = min(NAIVE_THREADS, max_threads)
    for gv in mod.get_global_vars():
        if not isinstance(mod[gv], tvm.tirx.PrimFunc):
            continue
        sch.work_on(gv.name_hint)
        for block in sch.get_child_blocks(sch.get_sblock("root")):
            loops = sch.get_loops(block)
            n_spatial = 0
            for iv in sch.get(block).iter_vars:
                if iv.iter_type != 0:  # 0 = data parallel
                    break
                n_spatial += 1
            if not loops:
                continue
            lead = loops[:max(1, min(n_spatial, len(loops)))]
            fused = sch.fuse(*lead) if len(lead) > 1 else lead[0]
            bx, tx = sch.split(fused, [None, threads])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
    return sch.mod
