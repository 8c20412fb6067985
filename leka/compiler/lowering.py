"""Lower a TIR module the way tvm.tirx.build does, and read what the host code does with it.

We run TVM's own steps (bind target, default TIR pipeline, host/device split, finalize, codegen) so the
launch geometry we report is the one the compiled module uses: the host entry function ends up as a
sequence of ``T.call_ffi_kernel(name, *buffers, *extents, launch_params=[...])`` calls plus the
global workspaces it allocates. The OpenCL runner replays exactly that sequence through pyopencl.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .artifact import Allocation, KernelLaunch

_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass
class Lowered:
    host_mod: Any
    device_mods: dict[Any, Any]  # Target -> IRModule
    runtime_module: Any
    kernels: list[KernelLaunch]
    allocations: list[Allocation]
    # For each kernel launch, where each argument comes from: ("param", index into the entry's params) |
    # ("workspace", index into workspaces) | ("scalar", value). Consumed by the OpenCL runner.
    launch_bindings: list[list[tuple[str, Any]]]
    workspaces: list[Allocation]


def lower_and_build(mod, target, param_names: list[str]) -> Lowered:
    """mod: IRModule of PrimFuncs; target: tvm.target.Target; param_names: the entry's buffer params."""
    import tvm
    from tvm.target import Target
    from tvm.tirx.build import split_host_device_mods, tir_to_runtime
    from tvm_ffi import DLDeviceType

    target_host = target.host if target.host is not None else (
        target if target.get_target_device_type() == DLDeviceType.kDLCPU else Target("llvm"))
    target = Target(target, host=target_host) if target.host is None else target
    mod = tvm.tirx.transform.BindTarget(target)(mod)
    pipeline, finalize_host, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
    mod = pipeline(mod)
    host_mod, device_mods = split_host_device_mods(mod)
    kernels, bindings, workspaces = _read_launches(host_mod, device_mods, param_names)
    allocations = list(workspaces)
    for dmod in device_mods.values():
        for _, f in dmod.functions.items():
            allocations.extend(_allocs_in(f.body))
    if not device_mods:  # CPU: intermediates the host code allocates
        for _, f in host_mod.functions.items():
            allocations.extend(_allocs_in(f.body))
    host_mod = finalize_host()(host_mod)
    device_mods = {t: finalize_device()(m) for t, m in device_mods.items()}
    runtime_module = tir_to_runtime(host_mod, device_mods, Target(target_host))
    return Lowered(host_mod, device_mods, runtime_module, kernels, allocations, bindings, workspaces)


def walk(stmt, visit) -> None:
    """Pre-order walk over TIR statements, into s_tir blocks too (0.27 exposes no Python post_order_visit for
    TIR)."""
    import tvm

    visit(stmt)
    for child in getattr(stmt, "seq", None) or ():
        walk(child, visit)
    for attr in ("block", "body", "then_case", "else_case"):
        child = getattr(stmt, attr, None)
        if isinstance(child, tvm.tirx.Stmt):
            walk(child, visit)


def _nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    try:
        item = np.dtype(dtype).itemsize
    except TypeError:  # e.g. bfloat16, float8: bits from TVM's dtype string
        import tvm

        item = max(1, tvm.DataType(dtype).bits * tvm.DataType(dtype).lanes // 8)
    return int(np.prod(shape, dtype=np.int64)) * item


def _const_shape(buf) -> tuple[int, ...]:
    return tuple(int(s) if hasattr(s, "value") or isinstance(s, int) else -1 for s in buf.shape)


def _allocs_in(body) -> list[Allocation]:
    import tvm

    out: list[Allocation] = []

    def visit(s):
        if isinstance(s, tvm.tirx.AllocBuffer):
            b = s.buffer
            scope = b.scope() or "global"
            shape = _const_shape(b)
            out.append(Allocation(b.name, scope, str(b.dtype), shape,
                                  _nbytes(str(b.dtype), shape) if -1 not in shape else -1))

    walk(body, visit)
    return out


def _read_launches(host_mod, device_mods, param_names: list[str]):
    """Kernel launches of the entry function, in order, with how to bind each argument."""
    import tvm

    entry = None
    for gv, f in host_mod.functions.items():
        if f.attrs is not None and f.attrs.get("tirx.is_entry_func", False):
            entry = f
    if entry is None or not device_mods:
        return [], [], []
    device_funcs = {gv.name_hint: f for m in device_mods.values() for gv, f in m.functions.items()}

    # In 0.27 buffers are Vars and a buffer's data is `buffer_data(buf)`; views and storage-rewrite
    # aliases are DeclBuffers over another buffer's data. Key everything by buffer Var identity.
    known: list[tuple[Any, tuple[str, Any]]] = []  # (buffer Var, binding)
    workspaces: list[Allocation] = []
    launches: list[KernelLaunch] = []
    bindings: list[list[tuple[str, Any]]] = []

    def lookup(var):
        for v, bind in known:
            if v.same_as(var):
                return bind
        return None

    def underlying(buf):
        data = getattr(buf, "data", None)
        if getattr(getattr(data, "op", None), "name", "") == "tirx.buffer_data" and not data.args[0].same_as(buf):
            return lookup(data.args[0])
        return None

    def visit(s):
        if isinstance(s, tvm.tirx.AllocBuffer):
            b = s.buffer
            shape = _const_shape(b)
            workspaces.append(Allocation(b.name, b.scope() or "global", str(b.dtype), shape,
                                         _nbytes(str(b.dtype), shape)))
            known.append((b, ("workspace", len(workspaces) - 1)))
        elif isinstance(s, tvm.tirx.DeclBuffer):
            b = s.buffer
            bind = underlying(b)
            if bind is None:  # a parameter's declaration (or a view re-declared under its own name)
                same_name = [bd for v, bd in known if v.name == b.name]
                bind = same_name[-1] if same_name else (
                    ("param", param_names.index(b.name)) if b.name in param_names else None)
            if bind is not None:
                known.append((b, bind))
        elif isinstance(s, tvm.tirx.Evaluate) and getattr(s.value, "op", None) is not None \
                and getattr(s.value.op, "name", "") == "tirx.call_ffi_kernel":
            launches.append(_launch_of(s.value, device_funcs, lookup, workspaces, param_names, bindings))

    walk(entry.body, visit)
    return launches, bindings, workspaces


def _launch_of(call, device_funcs, lookup, workspaces, param_names, bindings) -> KernelLaunch:
    import tvm

    args = list(call.args)
    name = str(args[0].value)
    kfunc = device_funcs[name]
    n_params = len(kfunc.params)
    launch_params = [str(p) for p in call.attrs.launch_params]
    extents = [int(a.value) if hasattr(a, "value") else -1 for a in args[1 + n_params:]]
    grid, block, dyn = [1, 1, 1], [1, 1, 1], 0
    for tag, ext in zip(launch_params, extents):
        if tag.startswith("blockIdx."):
            grid[_AXES[tag[-1]]] = ext
        elif tag.startswith("threadIdx."):
            block[_AXES[tag[-1]]] = ext
        elif "dyn_shared" in tag:
            dyn = ext
    arg_names, binding = [], []
    for a in args[1:1 + n_params]:
        if getattr(getattr(a, "op", None), "name", "") == "tirx.buffer_data":
            a = a.args[0]
        bind = lookup(a) if isinstance(a, tvm.tirx.Var) else None
        if bind is None:
            value = a.value if hasattr(a, "value") else None
            binding.append(("scalar", value))
            arg_names.append(str(a))
        elif bind[0] == "param":
            binding.append(bind)
            arg_names.append(param_names[bind[1]])
        else:
            binding.append(bind)
            arg_names.append(workspaces[bind[1]].name)
    bindings.append(binding)
    return KernelLaunch(name=name, grid=(grid[0], grid[1], grid[2]), block=(block[0], block[1], block[2]),
                        args=arg_names, dyn_shared_bytes=dyn)
