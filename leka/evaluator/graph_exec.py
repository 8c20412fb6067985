"""Run a compiled Relax graph (L3 tasks) with the same upload/run/download/time interface as the
kernel runners. Graphs return their outputs instead of writing destination buffers."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


class GraphExec:
    def __init__(self, executable: Any, target, args: Sequence[tuple]):
        import tvm
        from tvm import relax

        self.dev = tvm.cuda() if target.family == "cuda" else tvm.cpu()
        self.vm = relax.VirtualMachine(executable, self.dev)
        self.n_in = sum(1 for a in args if a[3] == "input")
        self._inputs: list = []
        self._host_inputs: list[np.ndarray] = []
        self._outputs: list[np.ndarray] = []

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        import tvm

        self._host_inputs = [np.array(a, copy=True) for a in arrays[: self.n_in]]
        self._inputs = [tvm.runtime.tensor(a, self.dev) for a in self._host_inputs]

    def run(self) -> None:
        out = self.vm["main"](*self._inputs)
        outs = list(out) if not hasattr(out, "numpy") else [out]
        self._outputs = [o.numpy() for o in outs]
        self.dev.sync()

    def download(self) -> list[np.ndarray]:
        return [t.numpy() for t in self._inputs] + self._outputs

    def time(self, number: int, final: bool = False) -> float:
        """The VM's own time_evaluator. A graph allocates its outputs on every call: it is not armed with the
        kernels' preproc (leka.runners.poison), and `final` changes nothing."""
        return float(self.vm.time_evaluator("main", self.dev, number=number, repeat=1)(*self._inputs).mean)


def load_graph(artifact: Any, target, args: Sequence[tuple]) -> GraphExec:
    return GraphExec(getattr(artifact, "executable", artifact), target, args)
