"""Run an artifact with TVM's runtime alone: `tvm.runtime.load_module` and the Relax VM's packed functions.

Nothing here imports TVM's compiler (tvm.relax, tvm.target, tvm.tirx ...), so an artifact runs where only
the runtime is installed (a board, a GPU box with the bundle of docs/cuda.md).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from leka.errors import NotRunnableError

from . import OptimizeError
from .artifact import CHECK_EXPECTED, CHECK_INPUTS, LIBRARY, load_manifest, verify_digests

NO_DEVICE = {
    "cuda": "this is a CUDA artifact and this machine has no CUDA GPU (or TVM has no CUDA runtime here): run it "
            "on the GPU host with TVM's runtime bundle (`leka gpu-bundle -o .gpu-bundle`, then `leka run OUT "
            "--check` there; docs/cuda.md), or tune on that GPU from here with `leka optimize MODEL --target cuda "
            "--remote` (docs/optimize.md)",
    "opencl": "this is an OpenCL artifact and this machine has no OpenCL device TVM can use: run it on the device "
              "(`leka run OUT --check` there; docs/targets.md)",
}
POOLED_ALLOCATOR = 2  # relax.VirtualMachine.POOLED_ALLOCATOR
KDL_CPU, KDL_CUDA, KDL_OPENCL = 1, 2, 4


def _device(family: str) -> Any:
    if family == "cuda":
        try:
            import gpu_runtime  # noqa: F401 - the bundle's nvcc callback (docs/cuda.md); absent with full TVM
        except ImportError:
            pass
    import tvm

    if family == "cpu":
        return tvm.runtime.device("cpu", 0), KDL_CPU
    dev = tvm.runtime.device(family, 0)
    if not dev.exist:  # else TVM's loader fails later with "a loader of that name is not registered"
        raise NotRunnableError(NO_DEVICE.get(family, f"this artifact runs on a {family} device; none is here"))
    return dev, KDL_CUDA if family == "cuda" else KDL_OPENCL


class VMCall:
    """One inference through a Relax VM's `main`, numpy in and numpy out, as a deployment calls it: the input
    tensors are allocated on the device once and refilled per call (`copyfrom`), outputs leave through DLPack
    (a zero-copy view on the CPU, copied so that the next call cannot change them). `tvm.runtime.tensor()` and
    `.numpy()` per call cost ~30 µs of Python-side allocation here, more than a small model's kernels (AD
    autoencoder: 43.7 µs per inference that way, 17 µs this way, of which `main` 14 µs)."""

    def __init__(self, main: Any, dev: Any) -> None:
        self._main, self._dev = main, dev
        self._on_cpu = dev.dlpack_device_type() == KDL_CPU
        self._key: list[tuple[tuple[int, ...], str]] = []
        self._bufs: list[Any] = []
        self._views: list[np.ndarray] = []  # on the CPU: numpy views of the buffers, filled by np.copyto

    def device_inputs(self, inputs: list[np.ndarray]) -> list[Any]:
        import tvm

        key = [(x.shape, x.dtype.str) for x in inputs]
        if key != self._key:
            self._key = key
            self._bufs = [tvm.runtime.empty(x.shape, str(x.dtype), self._dev) for x in inputs]
            self._views = [np.from_dlpack(b) for b in self._bufs] if self._on_cpu else []
        if self._on_cpu:
            for view, x in zip(self._views, inputs, strict=True):
                np.copyto(view, x)
        else:
            for buf, x in zip(self._bufs, inputs, strict=True):
                buf.copyfrom(np.asarray(x, order="C"))
        return self._bufs

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        out = self._main(*self.device_inputs(inputs))
        outs = [out] if hasattr(out, "numpy") else list(out)
        return [np.from_dlpack(o).copy() if self._on_cpu else o.numpy() for o in outs]


class LoadedArtifact:
    def __init__(self, out: str | Path) -> None:
        self.manifest = load_manifest(out)
        verify_digests(out, self.manifest)  # before model.so is loaded: a swapped library runs at load
        self.dev, dev_type = _device(self.manifest["target"]["family"])  # before tvm: the GPU bundle's hook
        import tvm
        lib = tvm.runtime.load_module(str(Path(out) / LIBRARY))
        self._vm = lib["vm_load_executable"]()
        init = [dev_type, 0, POOLED_ALLOCATOR]
        if dev_type != KDL_CPU:  # the VM runs shape functions on the host CPU
            init += [KDL_CPU, 0, POOLED_ALLOCATOR]
        self._vm["vm_initialization"](*init)
        self._call = VMCall(self._vm["main"], self.dev)

    def run(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outs = self._call(self.inputs(arrays))
        names = [spec.get("name") for spec in self.manifest["outputs"]]
        if len(outs) != len(names):
            raise OptimizeError(f"the library returned {len(outs)} output(s), the manifest names {len(names)} "
                                f"({', '.join(map(str, names))}): not this artifact's manifest")
        return dict(zip(names, outs))

    def read_inputs(self, path: str | Path, what: str = "--inputs") -> dict[str, np.ndarray]:
        """An .npz of inputs, each array's shape and dtype checked against the manifest from its header before
        anything is decompressed (leka.outside_files)."""
        from leka.outside_files import load_npz, npz_headers

        specs = {s["name"]: s for s in self.manifest["inputs"]}
        for name, (shape, dtype) in npz_headers(path, f"{what} {path}").items():
            spec = specs.get(name)
            if spec is not None and (list(shape) != spec["shape"] or str(dtype) != spec["dtype"]):
                raise OptimizeError(f"{what} {path}: input {name!r} is {dtype}{list(shape)}, the model takes "
                                    f"{spec['dtype']}{spec['shape']}")
        limit = sum(math.prod(s["shape"]) * np.dtype(s["dtype"]).itemsize for s in specs.values())
        return load_npz(path, limit, f"{what} {path}")

    def median_ms(self, arrays: dict[str, np.ndarray], runs: int = 50) -> float:
        """Median wall time of one inference, numpy in and numpy out (as `run`)."""
        import time

        inputs = self.inputs(arrays)
        self._call(inputs)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            self._call(inputs)
            times.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(times))

    def inputs(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The model's inputs in order, each checked against the manifest's shape and dtype."""
        args = []
        for spec in self.manifest["inputs"]:
            if spec["name"] not in arrays:
                raise OptimizeError(f"input {spec['name']!r} missing (the model's inputs: "
                                    f"{', '.join(s['name'] for s in self.manifest['inputs'])})")
            x = np.asarray(arrays[spec["name"]])
            if list(x.shape) != spec["shape"] or str(x.dtype) != spec["dtype"]:
                raise OptimizeError(f"input {spec['name']!r} is {x.dtype}{list(x.shape)}, the model takes "
                                    f"{spec['dtype']}{spec['shape']}")
            args.append(x)
        return args


def check_against_expected(art: LoadedArtifact, out: str | Path) -> dict[str, float]:
    """Run check/inputs.npz and compare with check/expected.npz (ONNX Runtime's outputs made at build time)."""
    from leka.evaluator.correctness import compare

    from .verify import TOLERANCES

    from leka.outside_files import load_npz

    ins = art.read_inputs(Path(out) / CHECK_INPUTS, "check file")
    exp = load_npz(Path(out) / CHECK_EXPECTED, what="check file")  # its digest was verified at load
    got = art.run(ins)
    errs = {}
    for name, e in exp.items():
        rtol, atol = TOLERANCES.get(str(e.dtype), (0.0, 0.0))
        if name not in got:
            raise OptimizeError(f"check file names output {name!r}; the manifest's outputs are {', '.join(got)}")
        v = compare(name, got[name], e, rtol, atol)
        if not v.ok:
            from . import VerificationError

            raise VerificationError(f"output {name!r} disagrees with ONNX Runtime: max abs error "
                                    f"{v.max_abs_err:.3g}; {v.reason}")
        errs[name] = v.max_abs_err
    return errs


def thread_env(threads: int | None) -> None:
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
