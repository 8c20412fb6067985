"""Fused PrimFuncs -> kernel tasks of the suite's Task format, one per structurally distinct kernel.

A kernel's args are its PrimFunc's parameters (inputs first, then the outputs the model's call_tir
writes); its reference is TVM's default build of that same PrimFunc, compiled and run in this (trusted)
process, never in a candidate's worker; its inputs are drawn from the parameters' shapes and dtypes.
Structurally identical PrimFuncs (tvm_ffi.structural_hash) are one task whose weight is how many times
the model calls them in all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from leka.tasks.task import ArgSpec, Task

# Kernels of a model reduce over up to thousands of terms (conv windows x channels) and the candidate may
# reassociate them: the graph-level tolerance of the suite's L3 tasks, not the single-op default.
KERNEL_RTOL, KERNEL_ATOL = 1e-3, 1e-4


@dataclass
class KernelSpec:
    """A picklable description of one kernel task (sent to tuning worker processes)."""

    key: str  # structural hash, hex
    name: str  # the first GlobalVar name the model uses for it
    names: list[str]  # every GlobalVar with this structure
    weight: int  # call sites in the model
    script: str  # TVMScript of the PrimFunc (global_symbol "main")
    args: list[tuple[str, tuple[int, ...], str, str]]  # (name, shape, dtype, role)
    flops: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # scheduled as written (tirx.is_scheduled: rnn_kernel's recurrence): built as it is, never searched
    fixed: bool = False

    @property
    def task_id(self) -> str:
        return f"k-{re.sub(r'[^a-z0-9_]+', '_', self.name.lower())[:48]}-{self.key[:10]}"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "names": self.names, "weight": self.weight,
                "task_id": self.task_id, "args": [[a[0], list(a[1]), a[2], a[3]] for a in self.args]}


def call_counts(mod: Any) -> dict[str, tuple[int, int]]:
    """{PrimFunc name: (call_tir sites, outputs per call)} over the Relax functions of `mod`."""
    from tvm import relax

    counts: dict[str, tuple[int, int]] = {}

    def visit(expr: Any) -> None:
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
            gv = expr.args[0]
            out_ty = expr.ty_args[0]
            n_out = len(out_ty.fields) if hasattr(out_ty, "fields") else 1
            prev = counts.get(gv.name_hint, (0, n_out))
            counts[gv.name_hint] = (prev[0] + 1, n_out)

    for _gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
    return counts


def kernel_specs(mod: Any) -> list[KernelSpec]:
    """The model's distinct kernels (module order), each with its weight (call sites in all)."""
    import tvm
    import tvm_ffi

    counts = call_counts(mod)
    by_key: dict[str, KernelSpec] = {}
    for gv, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or gv.name_hint not in counts:
            continue
        calls, n_out = counts[gv.name_hint]
        main = func.with_attr("global_symbol", "main")
        key = f"{tvm_ffi.structural_hash(main) & 0xFFFFFFFFFFFFFFFF:016x}"
        if key in by_key:
            by_key[key].weight += calls
            by_key[key].names.append(gv.name_hint)
            continue
        params = list(func.params)
        args = [(p.name, tuple(int(d) for d in p.shape), str(p.dtype),
                 "output" if i >= len(params) - n_out else "input") for i, p in enumerate(params)]
        fixed = bool(func.attrs is not None and func.attrs.get("tirx.is_scheduled", False))
        by_key[key] = KernelSpec(key, gv.name_hint, [gv.name_hint], calls, main.script(), args, fixed=fixed)
    return list(by_key.values())


def make_task(spec: KernelSpec, target: Any) -> Task:
    """The kernel as a suite Task; its reference is TVM's default build for `target`'s host CPU."""
    reference = _DefaultBuildReference(spec)
    nbytes = spec_bytes(spec)
    return Task(id=spec.task_id, pattern=f"model-kernel:{spec.name}", level=2, domain="vision",
                args=tuple(ArgSpec(n, tuple(s), d, role) for n, s, d, role in spec.args),
                build=lambda: _parse_trusted(spec.script), reference=reference, flops=spec.flops, bytes=nbytes,
                dtype=spec.args[-1][2], description=f"kernel {spec.name} of an imported model (x{spec.weight})",
                rtol=KERNEL_RTOL, atol=KERNEL_ATOL, tags=("model-kernel",), source="leka optimize",
                extra={"kernel_key": spec.key, "weight": spec.weight})


def spec_bytes(spec: KernelSpec) -> int:
    """The kernel's arguments' bytes."""
    return sum(int(np.prod(a[1], dtype=np.int64)) * np.dtype(a[2]).itemsize for a in spec.args)


def spec_data(spec: KernelSpec) -> dict[str, Any]:
    """The spec as JSON data (task_from_data rebuilds its Task in another process: leka/remote's store)."""
    from dataclasses import asdict

    return asdict(spec)


def task_from_data(data: dict[str, Any]) -> Task:
    args = [(n, tuple(s), d, r) for n, s, d, r in data["args"]]
    return make_task(KernelSpec(**{**data, "args": args}), None)


@lru_cache(maxsize=256)
def _parse_trusted(script: str) -> Any:
    """Parse TVMScript that TVM itself printed from the imported model (not a candidate's text). Cached: a
    rule pass re-reads the kernel's definition for every candidate it sketches (91 parses, 18 of 51 s, in a
    quick pass over three SqueezeNet kernels); a PrimFunc is immutable, so one parse serves them all."""
    import tvm

    return tvm.script.from_source(script).with_attr("global_symbol", "main")


class _DefaultBuildReference:
    """Reference outputs from TVM's default (unscheduled) build of the kernel on the host CPU.

    Compiled once, lazily, in the evaluating process: the kernel's definition is TVM's own lowering of
    the imported model, so it is trusted code, and it is independent of any candidate.
    """

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self._exe: Any = None

    def __call__(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        import tvm

        if self._exe is None:
            from leka.targets import get_target

            host = get_target("host-cpu").tvm_target()
            self._exe = tvm.compile(tvm.IRModule({"main": _parse_trusted(self.spec.script)}), target=host)
        dev = tvm.cpu()
        outs = [a for a in self.spec.args if a[3] == "output"]
        args = [tvm.runtime.tensor(np.asarray(x, order="C"), dev) for x in inputs]
        res = [tvm.runtime.empty(s, d, dev) for _n, s, d, _r in outs]
        self._exe["main"](*args, *res)
        return tuple(r.numpy() for r in res)
