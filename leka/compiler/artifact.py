"""What a build produces: the Artifact (device source, sizes, allocations, launch geometry, executable)."""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leka.targets import TargetPreset

SOURCE_JSON_CHARS = 4000  # to_json keeps the head of the source; the full text is hashed


@dataclass
class KernelLaunch:
    """One device-kernel launch of the entry function, as TVM's host code performs it."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[str]  # buffer (or scalar) names passed, in the kernel's parameter order
    dyn_shared_bytes: int = 0


@dataclass
class Allocation:
    """A buffer the compiled code allocates itself (global workspace, shared or local memory)."""

    name: str
    scope: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@dataclass
class Artifact:
    target: TargetPreset
    family: str
    entry: str
    source_kind: str  # "llvm-ir" | "asm" | "cuda" | "opencl" | "relax-vm"
    source: str  # device source for GPU families, LLVM IR for CPU
    asm: str | None
    compile_s: float
    binary_bytes: int  # CPU: object code size; GPU: device source size (compiled by the driver at load)
    allocations: list[Allocation]
    kernels: list[KernelLaunch]
    params: list[tuple[str, tuple[int, ...], str]]
    executable: Any = field(repr=False, default=None)  # tvm.runtime.Executable (not serialised)
    is_relax: bool = False
    notes: list[str] = field(default_factory=list)
    # GPU: per launch, where each kernel argument comes from ("param", i) | ("workspace", i) | ("scalar", v),
    # and the global workspaces the host code allocates between launches (read by the OpenCL runner).
    launch_bindings: list[list[tuple[str, Any]]] = field(default_factory=list, repr=False)
    workspaces: list[Allocation] = field(default_factory=list, repr=False)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        src = self.source
        return {
            "target": self.target.name, "target_dict": self.target.target, "family": self.family,
            "entry": self.entry, "source_kind": self.source_kind, "source_chars": len(src),
            "source_sha256_16": self.source_hash,
            "source_head": src[:SOURCE_JSON_CHARS] + ("\n... (truncated)" if len(src) > SOURCE_JSON_CHARS else ""),
            "asm_chars": len(self.asm) if self.asm is not None else None,
            "compile_s": round(self.compile_s, 4), "binary_bytes": self.binary_bytes,
            "allocations": [vars(a) | {"shape": list(a.shape)} for a in self.allocations],
            "kernels": [vars(k) | {"grid": list(k.grid), "block": list(k.block)} for k in self.kernels],
            "params": [[n, list(s), d] for n, s, d in self.params], "is_relax": self.is_relax,
            "notes": list(self.notes),
        }

    def export(self, path: str | os.PathLike) -> Path:
        """Write a loadable library (export_library). For a cross target (aarch64 host) it needs
        aarch64-linux-gnu-gcc; without it, the object file is written next to `path` instead and the
        returned path (…/.o) says so: link it on the board."""
        from leka.compiler.errors import CompileError

        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        host = _host_target_dict(self.target.target)
        triple = str(host.get("mtriple", ""))
        cross = triple.startswith("aarch64") and os.uname().machine != "aarch64"
        try:
            if not cross:
                self.executable.export_library(str(out))
                return out
            gcc = "aarch64-linux-android-clang" if "android" in triple else "aarch64-linux-gnu-gcc"
            if shutil.which(gcc):
                from tvm.support import cc

                self.executable.export_library(str(out), fcompile=cc.cross_compiler(gcc))
                return out
            obj = out.with_suffix(".o")
            self.executable.mod.write_to_file(str(obj))
            note = f"{gcc} not found: wrote host object {obj.name} (link it on the board)"
            if self.family != "cpu":  # the object holds host code only: keep the device source beside it
                dev = out.with_suffix({"cuda": ".cu", "opencl": ".cl"}.get(self.family, ".src"))
                dev.write_text(self.source)
                note += f" and device source {dev.name}"
            self.notes.append(note)
            return obj
        except Exception as e:  # noqa: BLE001 - TVM raises many types; keep one line
            raise CompileError(f"export to {out} failed: {first_line(e)}") from None


def _host_target_dict(target: dict[str, Any]) -> dict[str, Any]:
    if target.get("kind") == "llvm":
        return target
    host = target.get("host")
    return host if isinstance(host, dict) else {"kind": "llvm"}


_NOISE = ("Traceback", "File ", "note:", "  ", "During handling", "The above exception")


def first_line(err: BaseException) -> str:
    """TVM's first meaningful line of an error (no traceback, no IR dump)."""
    text = str(err)
    for line in text.splitlines():
        s = line.strip()
        if not s or any(line.startswith(p) for p in _NOISE) or s.startswith(("#", "^", "File ")):
            continue
        return s[:400]
    return type(err).__name__
