"""`leka gpu-bundle -o DIR`: the runtime-only TVM bundle that runs job folders on a GPU box (docs/cuda.md)."""
from __future__ import annotations

import json

from .grammar import add_out


def register(sub) -> None:
    p = sub.add_parser("gpu-bundle", help="build the runtime-only TVM bundle for a remote GPU host",
                       description="Build a runtime-only TVM (no compiler library) plus the apache-tvm-ffi wheel "
                                   "for the remote Python version and architecture, and gpu_runtime.py (nvcc "
                                   "compile callback). A job folder plus this bundle is all a GPU host needs.")
    add_out(p, "bundle directory (replaced; default .gpu-bundle)", default=".gpu-bundle")
    p.add_argument("--python", default="3.12", help="the remote host's Python version (default 3.12)")
    p.add_argument("--arch", default="x86_64", help="the remote host's CPU architecture: x86_64 or aarch64")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.remote.bundle import build_bundle

    info = build_bundle(args.out, python=args.python, arch=args.arch)
    if args.json:
        print(json.dumps(info))
        return 0
    print(f"bundle {info['dir']}: TVM {info['tvm']} runtime only, {info['tvm_ffi']}, {info['size_mb']} MiB")
    d = info["dir"] if str(info["dir"]).startswith("/") else f"$PWD/{info['dir']}"
    print(f"on the remote host, from the project root: python3 -m pip install -q --no-index --no-deps --target "
          f"{d}/site {d}/whl/*.whl && export PYTHONPATH={d}:{d}/site:$PWD && python3 -m leka.remote.run_job JOB_DIR...")
    return 0
