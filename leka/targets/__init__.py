"""Target presets: a name, a TVM target (dict form), runnability here, and hardware facts.

A preset name or a TVM target dict (JSON text or a dict) is accepted wherever a target is asked for.
The host presets (host-cpu, opencl-pocl, cuda) are detected on this machine; the edge presets are
data (presets.json) and build-only here.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from leka.errors import UnknownTargetError

from .detect import cpu_dict_facts, detect_cuda, detect_host_cpu, detect_opencl

FAMILIES = ("cpu", "cuda", "opencl")


@dataclass(frozen=True)
class TargetPreset:
    name: str
    family: str  # "cpu" | "cuda" | "opencl"
    target: dict[str, Any]  # TVM target in dict form
    runnable: bool  # can this machine execute it?
    runner: str | None  # "llvm" | "opencl-pyopencl" | "cuda" | None (build-only)
    description: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    why_not_runnable: str = ""

    def tvm_target(self):
        import tvm

        return tvm.target.Target(self.target)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def memory_budget_bytes(self) -> int | None:
        return self.facts.get("memory_budget_bytes")


def _edge_presets() -> dict[str, TargetPreset]:
    data = json.loads(resources.files("leka.targets").joinpath("presets.json").read_text())
    out = {}
    for name, p in data.items():
        if name.startswith("_"):
            continue
        out[name] = TargetPreset(
            name=name, family=p["family"], target=p["target"], runnable=False, runner=None,
            description=p["description"], facts=p["facts"],
            why_not_runnable=f"{name} is build-only here: run it on the board (TVM RPC) — see docs/targets.md",
        )
    return out


@lru_cache(maxsize=1)
def all_presets() -> dict[str, TargetPreset]:
    """Every known preset, host-detected ones first."""
    presets = {p.name: p for p in (detect_host_cpu(), detect_opencl(), detect_cuda())}
    presets.update(_edge_presets())
    return presets


def get_target(spec: str | dict[str, Any] | TargetPreset) -> TargetPreset:
    """Resolve a preset name, a TVM target dict, or JSON text of one, to a TargetPreset."""
    if isinstance(spec, TargetPreset):
        return spec
    presets = all_presets()
    if isinstance(spec, str):
        s = spec.strip()
        if s in presets:
            return presets[s]
        if s.startswith("{"):
            try:
                spec = json.loads(s)
            except json.JSONDecodeError as e:
                raise UnknownTargetError(f"target is neither a preset name nor valid JSON: {e.msg}") from None
        else:
            raise UnknownTargetError(
                f"unknown target {s!r}; known presets: {', '.join(presets)} (or pass a TVM target dict as JSON)")
    if isinstance(spec, dict):
        return _preset_from_dict(spec)
    raise UnknownTargetError(f"cannot use {type(spec).__name__} as a target")


def _preset_from_dict(d: dict[str, Any]) -> TargetPreset:
    import tvm

    kind = d.get("kind")
    try:
        tvm.target.Target(d)
    except Exception as e:  # TVM's message is long; keep its first line
        raise UnknownTargetError(f"invalid TVM target {json.dumps(d)}: {str(e).strip().splitlines()[0]}") from None
    family = {"llvm": "cpu", "c": "cpu", "cuda": "cuda", "opencl": "opencl"}.get(str(kind))
    if family is None:
        raise UnknownTargetError(f"unsupported target kind {kind!r}; supported: llvm, cuda, opencl")
    presets = all_presets()
    # A dict for a local kind inherits the local preset's runner and facts when this machine can run it.
    local = {"cpu": presets["host-cpu"], "opencl": presets["opencl-pocl"], "cuda": presets["cuda"]}[family]
    why = (local.why_not_runnable or f"no {family} device here") if not local.runnable else \
        (_cpu_mismatch(d, local.target) if family == "cpu" else "")
    runnable = not why
    return TargetPreset(
        name="custom", family=family, target=d, runnable=runnable, runner=local.runner if runnable else None,
        description=f"custom {kind} target" + (f" (runs here like {local.name})" if runnable else ""),
        facts=dict(local.facts) if runnable else cpu_dict_facts(d) if family == "cpu" else {},
        why_not_runnable="" if runnable else f"this target dict is build-only here: {why}",
    )


def _triple_key(triple: str) -> tuple[str, str]:
    """(arch, os) of an LLVM triple: x86_64-linux-gnu, x86_64-pc-linux-gnu and x86_64-conda-linux-gnu are one
    machine (the vendor part differs by who built the toolchain)."""
    parts = triple.split("-")
    os_name = next((p for p in parts[1:] if p in ("linux", "darwin", "windows", "none", "android")), "")
    return parts[0], os_name


def _cpu_mismatch(d: dict[str, Any], host: dict[str, Any]) -> str:
    """Why an llvm target dict cannot run on this host CPU, or "" when it can: same arch and OS (the triple's
    vendor may differ), and an mcpu that is this host's, generic or absent."""
    triple = d.get("mtriple")
    if triple and _triple_key(str(triple)) != _triple_key(str(host.get("mtriple", ""))):
        return f"mtriple {triple} is not this host's ({host.get('mtriple')})"
    mcpu = d.get("mcpu")
    if mcpu and mcpu not in (host.get("mcpu"), "generic"):
        return f"mcpu {mcpu} is not this host's ({host.get('mcpu')}); use its mcpu, or none, to tune here"
    return ""

