"""Weight packing done once at build time: a winner's layout-rewrite block split out and folded.

Some CPU rules copy a weight into a packed layout inside the kernel, on every call (cpu.conv_channel_pack's
[ci, kh, kw, co] copy). A block that does only that, at the root of the kernel and reading a parameter, is
annotated `meta_schedule.layout_rewrite_preproc` (PREPROC_KEY), as MetaSchedule's RewriteLayout marks its
own. In the model, TVM's SplitLayoutRewritePreproc moves such blocks into a `<kernel>_weight_prepack`
PrimFunc called before `<kernel>_prepacked`, and FoldConstant evaluates that call when the weight is a
constant, so the packed weight is a constant of the built model. Unsplit (a kernel Task), the annotation
changes nothing: the kernel runs whole.
"""
from __future__ import annotations

import sys
from typing import Any

from leka.ir.steps import PREPROC_KEY

PACK_SUFFIX, DONE_SUFFIX = "_weight_prepack", "_prepacked"  # names SplitLayoutRewritePreproc gives


def prepack_weights(mod: Any) -> Any:
    """`mod` with annotated weight-packing blocks split out and evaluated on constant weights; `mod`
    unchanged where no kernel has one (or TVM cannot split it: the kernels then pack per call, as tuned)."""
    from tvm import relax

    if not any(_marked(f) for _gv, f in mod.functions_items() if not isinstance(f, relax.Function)):
        return mod
    try:
        split = relax.transform.SplitLayoutRewritePreproc()(mod)
    except Exception as e:  # TVM's checks (a packing block under a compute loop, ...): keep the per-call packing
        print(f"prepack: weights stay packed per call ({str(e).strip().splitlines()[-1][:200]})", file=sys.stderr)
        return mod
    # the import folded every all-constant call before fusion (importer.fuse), so this folds only the packing
    # calls the split added whose weight is a constant
    return _drop_uncalled(relax.transform.FoldConstant()(split))


def _marked(func: Any) -> bool:
    """A block of `func` carries PREPROC_KEY (a walk of its statements: printing every kernel is slower)."""
    from leka.compiler.lowering import walk

    found: list[bool] = []
    walk(func.body, lambda s: found.append(True) if PREPROC_KEY in (getattr(s, "annotations", None) or {}) else None)
    return bool(found)


def _drop_uncalled(mod: Any) -> Any:
    """Without the split kernels and folded packings no call reaches (DCE keeps them: a winner's PrimFunc
    has a global_symbol, so it counts as public)."""
    import tvm

    from .extract import call_counts

    called = call_counts(mod)
    done = [n[:-len(DONE_SUFFIX)] for n in _names(mod) if n.endswith(DONE_SUFFIX)]
    gone = {n for k in done for n in (k, k + PACK_SUFFIX) if n not in called}
    return tvm.IRModule({gv: f for gv, f in mod.functions_items() if gv.name_hint not in gone}, attrs=mod.attrs)


def _names(mod: Any) -> set[str]:
    return {gv.name_hint for gv, _f in mod.functions_items()}


def prepacked(mod: Any) -> list[str]:
    """Kernels of `mod` whose packing was split out: "KERNEL:build" (folded) or "KERNEL:call" (packed per call)."""
    names = _names(mod)
    kernels = sorted(n[:-len(DONE_SUFFIX)] for n in names if n.endswith(DONE_SUFFIX))
    return [f"{k}:{'call' if k + PACK_SUFFIX in names else 'build'}" for k in kernels]
