"""TVM's tensor intrinsics (WMMA, VNNI, ...), registered once per process, fast.

`import tvm.s_tir.tensor_intrin` parses ~1,000 TVMScript PrimFuncs, and each parse calls `inspect.stack()`.
During an import the stack holds frames of `<frozen importlib._bootstrap>`, a file no module owns, so every
frame's `inspect.getmodule` misses and scans all of `sys.modules` (tvm's lazy modules make each scan slow):
45 of the import's 54 s here. The scan's answer for such a file does not change during the import, so a
miss is remembered until the import ends; `inspect` is restored afterwards.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache


@contextmanager
def _getmodule_misses_remembered() -> Iterator[None]:
    original = inspect.getmodule
    misses: set[str] = set()

    def getmodule(obj, _filename=None):  # noqa: ANN001, ANN202  (inspect's own signature)
        if _filename is not None and _filename in misses:
            return None
        module = original(obj, _filename)
        if module is None and _filename is not None:
            misses.add(_filename)
        return module

    inspect.getmodule = getmodule
    try:
        yield
    finally:
        inspect.getmodule = original


@lru_cache(maxsize=1)
def register_tensor_intrinsics() -> None:
    """Import TVM's tensor-intrinsic tables (schedule.tensorize looks intrinsics up by name)."""
    with _getmodule_misses_remembered():
        import tvm.s_tir.tensor_intrin  # noqa: F401

    from .vnni import register_vnni  # LEKA's vpdpbusd intrinsic (TVM's fails LLVM 22's verifier)

    register_vnni()
