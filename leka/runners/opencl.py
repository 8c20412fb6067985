"""OpenCL runner: TVM's generated OpenCL C executed through pyopencl (this TVM wheel has no OpenCL runtime).

The artifact carries the launch sequence TVM's host code performs (kernel name, argument bindings,
grid/block extents, global workspaces). We replay it: one NDRange per launch, in order, with
global size = grid * block and local size = block (TVM maps blockIdx.x -> get_group_id(0),
threadIdx.x -> get_local_id(0)).
"""
from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Sequence

import numpy as np

from leka.errors import NotRunnableError

from .base import RunnerError, check_arrays


@lru_cache(maxsize=1)
def _context():
    try:
        import pyopencl as cl

        ctx = cl.create_some_context(interactive=False)
    except Exception as e:  # noqa: BLE001 - ImportError, no platform, ICD errors
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise NotRunnableError(f"OpenCL unavailable: {why}") from None
    return ctx, cl.CommandQueue(ctx)


class OpenCLRunner:
    name = "opencl-pyopencl"

    def __init__(self, preset):
        self.preset = preset

    def load(self, artifact) -> "OpenCLLoaded":
        if artifact.family != "opencl":
            raise NotRunnableError(f"the OpenCL runner runs OpenCL artifacts, not {artifact.family}")
        if artifact.is_relax:
            raise NotRunnableError("graph (relax) artifacts cannot run through pyopencl: it needs TVM's OpenCL "
                                   "runtime, absent from this wheel; run graph tasks on host-cpu")
        if not artifact.kernels:
            raise RunnerError("the OpenCL artifact has no kernel launches")
        if any(k.dyn_shared_bytes for k in artifact.kernels):
            raise NotRunnableError("dynamic shared memory is not supported by the pyopencl runner")
        return OpenCLLoaded(artifact)


class OpenCLLoaded:
    def __init__(self, artifact):
        import pyopencl as cl

        self.cl = cl
        self.ctx, self.queue = _context()
        self.params = artifact.params
        try:
            program = cl.Program(self.ctx, artifact.source).build()
        except Exception as e:  # noqa: BLE001 - build log is long; keep its first line
            lines = str(e).strip().splitlines()
            first = next((ln.strip() for ln in lines if "error:" in ln), lines[0] if lines else type(e).__name__)
            raise RunnerError(f"OpenCL build failed: {first}") from None
        self.launches = []
        for k, binding in zip(artifact.kernels, artifact.launch_bindings, strict=True):
            glob = tuple(g * b for g, b in zip(k.grid, k.block))
            self.launches.append((getattr(program, k.name), glob, tuple(k.block), binding))
        mf = cl.mem_flags
        # Workspaces live as long as the loaded artifact: TVM would allocate them per call.
        self.workspaces = [cl.Buffer(self.ctx, mf.READ_WRITE, max(1, w.nbytes)) for w in artifact.workspaces]
        self.buffers: list = []
        self.host: list[np.ndarray] = []
        self.armed = None

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        cl = self.cl
        self.host = check_arrays(self.params, arrays)
        self.armed = None  # (alternate inputs, output poison, rng) once timing is armed
        self.buffers = [cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
                        if a.nbytes else cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 1) for a in self.host]
        self.queue.finish()

    def _enqueue(self) -> None:
        for kernel, glob, local, binding in self.launches:
            args = []
            for kind, value in binding:
                if kind == "param":
                    args.append(self.buffers[value])
                elif kind == "workspace":
                    args.append(self.workspaces[value])
                else:
                    args.append(np.int32(value) if isinstance(value, int) else np.float32(value))
            kernel.set_args(*args)
            self.cl.enqueue_nd_range_kernel(self.queue, kernel, glob, local)

    def run(self) -> None:
        if not self.buffers:
            raise RunnerError("upload() the arrays before run()")
        try:
            self._enqueue()
            self.queue.finish()
        except self.cl.Error as e:
            raise RunnerError(f"OpenCL launch failed: {str(e).splitlines()[0]}") from None

    def download(self) -> list[np.ndarray]:
        out = [np.empty_like(h) for h in self.host]
        for dst, buf in zip(out, self.buffers):
            if dst.nbytes:
                self.cl.enqueue_copy(self.queue, dst, buf)
        self.queue.finish()
        return out

    def arm(self, outputs: Sequence[int]) -> None:
        """Before every later timed run, untimed: outputs poisoned, inputs a fresh mix of the uploaded ones and
        their alternate, as for TVM kernels (leka.runners.poison); the device inputs become the alternate."""
        from .poison import alternate, value

        rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
        inputs = [i for i in range(len(self.host)) if i not in outputs]
        alt = {i: alternate(self.host[i], rng) for i in inputs}
        for i, a in alt.items():
            if a.nbytes:
                self.cl.enqueue_copy(self.queue, self.buffers[i], a)
        self.queue.finish()
        fills = {i: np.asarray(value(self.params[i][2]), dtype=self.params[i][2]) for i in outputs}
        self.armed = (alt, fills, rng)

    def _preproc(self, final: bool) -> None:
        from .poison import mix

        alt, fills, rng = self.armed
        for i, a in alt.items():
            if a.nbytes:
                mixed = self.host[i] if final else mix(self.host[i], a, rng)
                self.cl.enqueue_copy(self.queue, self.buffers[i], np.asarray(mixed, order="C"))
        for i, pattern in fills.items():
            if self.host[i].nbytes:
                self.cl.enqueue_fill_buffer(self.queue, self.buffers[i], pattern, 0, self.host[i].nbytes)
        self.queue.finish()

    def time(self, number: int, final: bool = False) -> float:
        """Mean wall time per run over `number` runs, each synchronised (launch cost included, as TVM's
        time_evaluator includes it on other devices); armed, the preproc before each run (untimed), `final`
        restoring the uploaded inputs."""
        if final and self.armed is not None:  # the run before the checked one sees the alternate inputs
            for i, a in self.armed[0].items():
                if a.nbytes:
                    self.cl.enqueue_copy(self.queue, self.buffers[i], a)
        self.run()  # warm-up: first launch pays PoCL's kernel JIT
        total = 0.0
        for _ in range(max(1, number)):
            if self.armed is not None:
                self._preproc(final)
            t0 = time.perf_counter()
            self._enqueue()
            self.queue.finish()
            total += time.perf_counter() - t0
        return total / max(1, number)
