"""The build side of a remote device: a sandboxed process (the evaluator's sandbox, no network) that parses
and checks a candidate exactly as the evaluation worker does, builds it for the board's target and answers
with the exported library as bytes; for timing it also builds our mix and timed-wrapper library for the
board (rpc_timing.py). It never runs a candidate; the RPC session lives in the parent
(rpc_evaluator.py), which only moves this library and arrays.

    python -m leka.runners.rpc_build --in FD --out FD
"""
from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from typing import Any, cast

import numpy as np


def build_library(req: dict[str, Any]) -> dict[str, Any]:
    from leka.compiler import build
    from leka.errors import error_line
    from leka.evaluator.worker import _check_signature, _parse, _Stage
    from leka.targets import get_target

    t0 = time.perf_counter()
    mod = _parse(req["source"])
    if _check_signature(mod, req["args"]):
        raise _Stage("signature", "graph (Relax) candidates do not run on remote devices yet")
    target = get_target(req["target"])
    try:
        art = build(mod, target)
    except Exception as e:
        raise _Stage("build", error_line(e)) from None
    lib = _library_bytes(art, target)
    return {"ok": True, "lib": lib, "suffix": ".so", "entry": art.entry, "params": [list(p) for p in art.params],
            "family": art.family, "compile_s": time.perf_counter() - t0, "build_s": art.compile_s,
            "binary_bytes": art.binary_bytes, "source_kind": art.source_kind}


def _library_bytes(art: Any, target: Any) -> np.ndarray:
    """The artifact exported as a shared library for the board (cross-linked for Arm boards), as bytes."""
    from leka.errors import error_line
    from leka.evaluator.worker import _Stage

    with tempfile.TemporaryDirectory() as d:
        try:
            path = art.export(os.path.join(d, "lib.so"))
        except Exception as e:
            raise _Stage("export", error_line(e)) from None
        if path.suffix != ".so":  # a cross target without its linker: an object file only
            raise _Stage("export", "; ".join(art.notes) or f"no library for {target.name}")
        return np.frombuffer(path.read_bytes(), dtype=np.uint8)


def build_timing(req: dict[str, Any]) -> dict[str, Any]:
    """The library of leka.runners.rpc_timing (mix + timed wrapper) for a kernel signature, built for the
    board's target (our own scripts: no candidate text reaches this op)."""
    import tvm

    from leka.compiler.backends.base import make_artifact, tvm_target
    from leka.errors import error_line
    from leka.evaluator.worker import _Stage
    from leka.targets import get_target

    from .rpc_timing import timing_module

    target = get_target(req["target"])
    try:
        ex = tvm.compile(timing_module(req["params"], req["outputs"], req["entry"]), target=tvm_target(target))
    except Exception as e:
        raise _Stage("timing", f"timing library: {error_line(e)}") from None
    art = make_artifact(target, source_kind="llvm-ir", source="", asm=None, compile_s=0.0, binary_bytes=0,
                        allocations=[], kernels=[], params=[], executable=ex)
    return {"ok": True, "lib": _library_bytes(art, target)}


def _handle_build(req: dict[str, Any], _cache: dict) -> dict[str, Any]:
    if req.get("op") == "load":
        return build_library(req)
    if req.get("op") == "timing":
        return build_timing(req)
    raise ValueError(f"unknown op {req.get('op')!r}")


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m leka.runners.rpc_build")
    ap.add_argument("--in", dest="fd_in", type=int, required=True)
    ap.add_argument("--out", dest="fd_out", type=int, required=True)
    a = ap.parse_args(argv)
    cast(io.TextIOWrapper, sys.stdout).reconfigure(line_buffering=True)
    from leka.evaluator.worker import serve

    serve(a.fd_in, a.fd_out, handle=_handle_build)


if __name__ == "__main__":
    main()
