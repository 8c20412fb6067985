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

    @property
    def rolls_inputs(self) -> bool:
        """Whether time(…, poison) also rolls the inputs before every run (kernels; not graphs)."""
        return self.vm is None

    def timer(self, number: int, poison: Sequence[int] = ()):
        """The loaded library's own time_evaluator (a C++ loop: nothing in Python is timed). Kernels: one
        call per repeat; with `poison` (the output positions) a preproc of ours runs before each, untimed:
        outputs poisoned, inputs rolled (leka.runners.poison). Graphs allocate fresh outputs on every call:
        `number` back-to-back calls."""
        if self.vm is not None:
            return self.vm.time_evaluator("main", self.dev, number=number, repeat=1)
        from .poison import preproc

        f_preproc = preproc(self.params, poison, self.dev) if poison else ""
        return self.artifact.executable.mod.time_evaluator(self.artifact.entry, self.dev, number=1, repeat=number,
                                                           f_preproc=f_preproc)

    def time(self, number: int, poison: Sequence[int] = ()) -> float:
        """Mean seconds per run over `number` timed runs."""
        return float(np.mean(self.timer(number, poison)(*self.tensors).results))
