"""OpenCL runner: TVM's generated OpenCL C executed through pyopencl (this TVM wheel has no OpenCL runtime).

The artifact carries the launch sequence TVM's host code performs (kernel name, argument bindings,
grid/block extents, global workspaces). We replay it: one NDRange per launch, in order, with
global size = grid * block and local size = block (TVM maps blockIdx.x -> get_group_id(0),
threadIdx.x -> get_local_id(0)).
"""
from __future__ import annotations

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

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        cl = self.cl
        self.host = check_arrays(self.params, arrays)
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

    rolls_inputs = True  # time(…, poison) rolls the inputs before every run, as the TVM runners do

    def _preproc(self, poison: Sequence[int]) -> list:
        """Per run, untimed: poison the outputs, roll every input by one row (leka.runners.poison) into a
        spare buffer that then takes its place."""
        from .poison import roll_axis, value

        cl, steps = self.cl, []
        for i, (host, (_n, shape, dtype)) in enumerate(zip(self.host, self.params)):
            if not host.nbytes:
                continue
            if i in poison:
                pattern = np.asarray(value(dtype), dtype=dtype)
                steps.append(lambda i=i, p=pattern: cl.enqueue_fill_buffer(self.queue, self.buffers[i], p, 0,
                                                                            self.host[i].nbytes))
            elif roll_axis(shape) is not None:
                row = int(np.prod(shape[roll_axis(shape) + 1:], dtype=np.int64)) * host.itemsize
                spare = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, host.nbytes)
                steps.append(lambda i=i, row=row, box=[spare]: self._roll(i, row, box))
        return steps

    def _roll(self, i: int, row: int, box: list) -> None:
        src, dst, total = self.buffers[i], box[0], self.host[i].nbytes
        self.cl.enqueue_copy(self.queue, dst, src, byte_count=total - row, src_offset=row, dst_offset=0)
        self.cl.enqueue_copy(self.queue, dst, src, byte_count=row, src_offset=0, dst_offset=total - row)
        self.buffers[i], box[0] = dst, src

    def time(self, number: int, poison: Sequence[int] = ()) -> float:
        """Mean wall time per run over `number` runs, each synchronised (launch cost included, as TVM's
        time_evaluator includes it on other devices). With `poison` (the output positions), before every
        run and untimed: outputs poisoned, inputs rolled, so a kernel never finds its previous answer."""
        self.run()  # warm-up: first launch pays PoCL's kernel JIT
        steps = self._preproc(poison) if poison else []
        total = 0.0
        for _ in range(max(1, number)):
            for step in steps:
                step()
            self.queue.finish()
            t0 = time.perf_counter()
            self._enqueue()
            self.queue.finish()
            total += time.perf_counter() - t0
        return total / max(1, number)
