"""The build side of a remote device: a sandboxed process (the evaluator's sandbox, no network) that parses
and checks a candidate exactly as the evaluation worker does, builds it for the board's target and answers
with the exported library as bytes. It never runs a candidate; the RPC session lives in the parent
(rpc_evaluator.py), which only moves this library and arrays.

    python -m leka.runners.rpc_build --in FD --out FD
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

import numpy as np


def build_library(req: dict[str, Any]) -> dict[str, Any]:
    from leka.compiler import build
    from leka.evaluator.worker import _check_signature, _parse, _Stage, one_line
    from leka.targets import get_target

    t0 = time.perf_counter()
    mod = _parse(req["source"])
    if _check_signature(mod, req["args"]):
        raise _Stage("signature", "graph (Relax) candidates do not run on remote devices yet")
    target = get_target(req["target"])
    try:
        art = build(mod, target)
    except Exception as e:
        raise _Stage("build", one_line(e)) from None
    with tempfile.TemporaryDirectory() as d:
        try:
            path = art.export(os.path.join(d, "lib.so"))
        except Exception as e:
            raise _Stage("export", one_line(e)) from None
        if path.suffix != ".so":  # a cross target without its linker: an object file only
            raise _Stage("export", "; ".join(art.notes) or f"no library for {target.name}")
        lib = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    return {"ok": True, "lib": lib, "suffix": ".so", "entry": art.entry, "params": [list(p) for p in art.params],
            "family": art.family, "compile_s": time.perf_counter() - t0, "build_s": art.compile_s,
            "binary_bytes": art.binary_bytes, "source_kind": art.source_kind}


def _handle_build(req: dict[str, Any], _cache: dict) -> dict[str, Any]:
    if req.get("op") != "load":
        raise ValueError(f"unknown op {req.get('op')!r}")
    return build_library(req)


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m leka.runners.rpc_build")
    ap.add_argument("--in", dest="fd_in", type=int, required=True)
    ap.add_argument("--out", dest="fd_out", type=int, required=True)
    a = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    from leka.evaluator.worker import serve

    serve(a.fd_in, a.fd_out, handle=_handle_build)


if __name__ == "__main__":
    main()
