"""The runtime-only TVM bundle for a GPU box or board: `leka gpu-bundle --python 3.12 --arch x86_64 -o DIR`.

A job folder (leka.remote.make_job) plus this bundle is all a remote host with Python, NumPy and nvcc
needs: TVM's Python package without the compiler library (`libtvm_compiler.so`, ~250 MB; the runtime is
~48 MB), the `apache-tvm-ffi` wheel for the remote Python version and architecture, and `gpu_runtime.py`,
which loads TVM's CUDA runtime and registers the nvcc compile callback that exported CUDA modules need
when they are loaded (they carry CUDA source). On the remote host:

    python3 -m pip install -q --no-index --no-deps --target DIR/site DIR/whl/*.whl
    export PYTHONPATH=$PWD/DIR:$PWD/DIR/site:$PWD GPU_ARCH=sm_90
    python3 -m leka.remote.run_job JOB_DIR...
"""
from __future__ import annotations

import importlib.metadata
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from leka.errors import LekaError

ARCHES = ("x86_64", "aarch64")
# manylinux tags pip may pick for the remote platform, newest first (the ffi wheel is cp-specific)
_MANYLINUX = ("manylinux_2_28", "manylinux_2_27", "manylinux_2_24", "manylinux_2_17", "manylinux2014")
_EXCLUDED = ("libtvm_compiler.so", "__pycache__")
# C++ headers and sources at the package's top level (CUTLASS alone is 26 MB): nothing loads them at run time
_TOP_EXCLUDED = ("3rdparty", "src", "include")

GPU_RUNTIME = '''"""Runtime-only TVM on the GPU host: load the CUDA runtime and compile CUDA source with local nvcc.
Written by `leka gpu-bundle` (leka/remote/bundle.py)."""
import ctypes, hashlib, os, shutil, subprocess, tempfile
os.environ.setdefault("TVM_USE_RUNTIME_LIB", "1")
import tvm, tvm_ffi
ctypes.CDLL(os.path.join(os.path.dirname(tvm.__file__), "lib", "libtvm_runtime_cuda.so"), ctypes.RTLD_GLOBAL)
ARCH = os.environ.get("GPU_ARCH", "sm_90")


@tvm_ffi.register_global_func("tvm_callback_cuda_compile", override=True)
def _compile(code, target=None):
    # cubins cached by source hash (GPU_CUBIN_CACHE): a job checked in one process and timed in another
    # compiles each kernel once
    cache = os.environ.get("GPU_CUBIN_CACHE")
    key = hashlib.sha256((ARCH + code).encode()).hexdigest()
    if cache and os.path.exists(os.path.join(cache, key + ".cubin")):
        with open(os.path.join(cache, key + ".cubin"), "rb") as f:
            return bytearray(f.read())
    d = tempfile.mkdtemp()
    src, out = os.path.join(d, "k.cu"), os.path.join(d, "k.cubin")
    with open(src, "w") as f:
        f.write(code)
    subprocess.run(["nvcc", "-cubin", "-O3", f"-arch={ARCH}", "-w", "-o", out, src], check=True)
    if cache:  # written whole, then renamed: jobs checked in parallel may share a kernel
        os.makedirs(cache, exist_ok=True)
        part = os.path.join(cache, f"{key}.{os.getpid()}.part")
        shutil.copy(out, part)
        os.replace(part, os.path.join(cache, key + ".cubin"))
    with open(out, "rb") as f:
        return bytearray(f.read())
'''


def _platforms(arch: str) -> list[str]:
    return [f"{tag}_{arch}" for tag in _MANYLINUX]


def _pip_download(requirement: str, python: str, arch: str, dest: Path, *, implementation: str) -> Path:
    """One wheel for the remote platform into dest (pip's own resolver; no dependencies)."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "--python-version", python, "--implementation", implementation, "-d", str(dest), requirement]
    for plat in _platforms(arch):
        cmd += ["--platform", plat]
    before = set(dest.glob("*.whl"))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    new = sorted(set(dest.glob("*.whl")) - before) or sorted(dest.glob(f"{requirement.split('=')[0].replace('-', '_')}*.whl"))
    if proc.returncode != 0 or not new:
        last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise LekaError(f"no {requirement} wheel for Python {python} on {arch}: {last}")
    return new[0]


def _copy_tvm(src_pkg: Path, out: Path) -> None:
    def ignore(folder: str, names: list[str]) -> list[str]:
        top = Path(folder) == src_pkg
        return [n for n in names if n in _EXCLUDED or (top and n in _TOP_EXCLUDED)]
    shutil.copytree(src_pkg, out / "tvm", ignore=ignore)


def _extract_tvm(wheel: Path, out: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            parts = name.split("/")
            if parts[0] == "tvm" and not any(x in parts for x in _EXCLUDED) \
                    and not (len(parts) > 2 and parts[1] in _TOP_EXCLUDED):
                zf.extract(name, out)


def _check_args(python: str, arch: str) -> None:
    if not re.fullmatch(r"3\.\d{1,2}", python):
        raise LekaError(f"--python wants a version like 3.12, not {python!r}")
    if arch not in ARCHES:
        raise LekaError(f"--arch must be one of {', '.join(ARCHES)}, not {arch!r}")


def build_bundle(out: str | Path, *, python: str = "3.12", arch: str = "x86_64") -> dict[str, object]:
    """Write the runtime-only bundle into `out` (replaced if present); returns a summary."""
    import tvm

    _check_args(python, arch)
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    (out / "whl").mkdir(parents=True)
    ffi_version = importlib.metadata.version("apache-tvm-ffi")
    tvm_version = importlib.metadata.version("apache-tvm")
    if arch == platform.machine():  # the installed package is built for this architecture (py3-none wheel)
        _copy_tvm(Path(tvm.__file__).parent, out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = _pip_download(f"apache-tvm=={tvm_version}", python, arch, Path(tmp), implementation="py")
            _extract_tvm(wheel, out)
    if not (out / "tvm" / "lib" / "libtvm_runtime_cuda.so").exists():
        raise LekaError(f"the apache-tvm {tvm_version} build for {arch} has no libtvm_runtime_cuda.so")
    ffi = _pip_download(f"apache-tvm-ffi=={ffi_version}", python, arch, out / "whl", implementation="cp")
    (out / "gpu_runtime.py").write_text(GPU_RUNTIME)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {"dir": str(out), "python": python, "arch": arch, "tvm": tvm_version, "tvm_ffi": ffi.name,
            "size_mb": round(size / 2**20, 1)}
