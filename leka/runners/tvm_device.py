"""Loaded artifact on a TVM runtime device (CPU via LLVM, or CUDA): TIR entry or relax VM."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import RunnerError, check_arrays


class TVMLoaded:
    def __init__(self, artifact, dev):
        import tvm

        self.artifact, self.dev = artifact, dev
        self.params = artifact.params
        self.tensors: list = []
        self.outputs: list = []  # relax: returned arrays
        self.preproc = None  # leka.runners.poison.Preproc once timing is armed
        self._last_preproc = None  # its compiled wrapper serves later arms of this kernel
        if artifact.is_relax:
            self.vm = tvm.relax.VirtualMachine(artifact.executable, dev)
            self.func = self.vm["main"]
        else:
            self.vm = None
            try:
                self.func = artifact.executable.mod[artifact.entry]
            except Exception as e:  # noqa: BLE001
                raise RunnerError(f"cannot load {artifact.entry}: {str(e).splitlines()[0] if str(e) else e}") from None

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        import tvm

        if self.vm is not None:  # relax: params are the graph inputs; trailing output arrays are ignored
            arrays = list(arrays)[:len(self.params)]
        arrays = check_arrays(self.params, arrays)
        self.tensors = [tvm.runtime.tensor(a, self.dev) for a in arrays]
        self.preproc = None  # timing is armed again for new arrays

    def run(self) -> None:
        if not self.tensors and self.params:
            raise RunnerError("upload() the arrays before run()")
        out = self.func(*self.tensors)
        if self.vm is not None:
            self.outputs = [out] if hasattr(out, "numpy") else list(out)
        self.dev.sync()

    def download(self) -> list[np.ndarray]:
        self.dev.sync()
        return [t.numpy() for t in self.tensors] + [o.numpy() for o in self.outputs]

    def prepare_timing(self, outputs: Sequence[int]) -> None:
        """Compile what arm() needs ahead of time (CPU kernels: the preproc and this kernel's wrapper)."""
        import tvm

        if self.vm is None and self.dev.dlpack_device_type() == tvm.cpu().dlpack_device_type():
            from .poison import compiled_call, registered_mix

            registered_mix(self.params, outputs)
            self._last_preproc = compiled_call(self.func, self.params, outputs)

    def arm(self, outputs: Sequence[int]) -> None:
        """Time every later run with the preproc of leka.runners.poison before it (outputs poisoned, inputs a
        fresh mix of the uploaded ones and their alternate); `outputs`: the output params' positions. Graphs
        allocate fresh outputs on every call and are not armed."""
        if self.vm is None:
            from .poison import Preproc

            self.preproc = self._last_preproc = Preproc(self.artifact.executable.mod, self.artifact.entry,
                                                        self.tensors, self.params, outputs, self.dev,
                                                        reuse=self._last_preproc)

    def time(self, number: int, final: bool = False) -> float:
        """Mean seconds per run over `number` runs timed by TVM's time_evaluator (a C++ loop: nothing in
        Python is timed), one run per repeat. Armed: the preproc before each run, untimed; `final`: it restores
        the uploaded inputs (the run whose outputs are checked). Graphs: `number` back-to-back calls."""
        if self.vm is not None:
            return float(self.vm.time_evaluator("main", self.dev, number=number, repeat=1)(*self.tensors).mean)
        if self.preproc is not None:
            timer, args = self.preproc.timer(number, final)
        else:
            timer = self.artifact.executable.mod.time_evaluator(self.artifact.entry, self.dev, number=1,
                                                                repeat=number)
            args = self.tensors
        return float(np.mean(timer(*args).results))
