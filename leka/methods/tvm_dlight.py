"""`tvm-dlight`: TVM dlight's default rules for the target family where one applies; where none does the
sample records "dlight: no rule applies" and uses the naive lowering (docs/benchmark.md).

L3 graphs: the Relax module is legalized and fused (TVM's default operator pipeline), then the rules
are applied to every fused PrimFunc; the sample records how many functions a rule scheduled.
"""
from __future__ import annotations

from typing import Any

from .base import MethodContext, Sample, evaluate_source, register_method

NO_RULE = "dlight: no rule applies"


def schedule_graph(mod: Any, target: Any) -> tuple[Any, int, int]:
    """Legalize + fuse a Relax module and apply dlight to its PrimFuncs: (module, scheduled, total)."""
    import tvm
    from tvm import relax

    from leka.compiler.schedules import apply_dlight  # here: importing the method registry stays light

    tvm_target = tvm.target.Target(target.target)
    with tvm_target:
        fused = tvm.transform.Sequential([
            relax.transform.DecomposeOpsForInference(), relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(), relax.transform.FuseOps(),
            relax.transform.FuseTIR(), relax.transform.DeadCodeElimination()])(mod)
    out = apply_dlight(fused, tvm_target, target.family)
    funcs = [f for _, f in out.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]
    scheduled = sum(1 for f in funcs if f.attrs is not None and f.attrs.get("tirx.is_scheduled", False))
    return out, scheduled, len(funcs)


class TvmDlight:
    name = "tvm-dlight"
    is_llm = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def run(self, task: Any, target: Any, ctx: MethodContext) -> list[Sample]:
        import tvm

        from leka.compiler import default_schedule

        definition = task.build()
        meta: dict[str, Any]  # str values, and whether dlight applied
        if isinstance(definition, tvm.IRModule) and any(
                isinstance(f, tvm.relax.Function) for _, f in definition.functions_items()):
            mod, n_sched, n_funcs = schedule_graph(definition, target)
            if n_sched == 0:
                meta = {"schedule": f"{NO_RULE} (0/{n_funcs} fused functions); naive lowering"}
                mod = default_schedule(definition, target, rules="naive")
            else:
                meta = {"schedule": f"dlight on {n_sched}/{n_funcs} fused functions"}
        else:
            mod = default_schedule(definition, target, rules="dlight")
            meta = {"schedule": "dlight"}
            if mod is None:
                mod = default_schedule(definition, target, rules="naive")
                meta = {"schedule": f"{NO_RULE}; naive lowering"}
        meta["dlight_applied"] = not meta["schedule"].startswith(NO_RULE)
        return [evaluate_source(ctx, task, mod.script(), self.name, meta=meta)]


register_method(TvmDlight.name, TvmDlight)
