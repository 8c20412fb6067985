"""Run a compiled Relax graph (L3 tasks) with the same upload/run/download/time interface as the
kernel runners. Graphs return their outputs instead of writing destination buffers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from leka.runners.poison import Preproc


class GraphExec:
    def __init__(self, executable: Any, target, args: Sequence[tuple]):
        import tvm
        from tvm import relax

        self.dev = tvm.cuda() if target.family == "cuda" else tvm.cpu()
        self.vm = relax.VirtualMachine(executable, self.dev)
        self.n_in = sum(1 for a in args if a[3] == "input")
        self.params = [(str(a[0]), tuple(int(d) for d in a[1]), str(a[2])) for a in args if a[3] == "input"]
        self._inputs: list = []
        self._host_inputs: list[np.ndarray] = []
        self._outputs: list[np.ndarray] = []
        self.preproc: Preproc | None = None  # once timing is armed

    def upload(self, arrays: Sequence[np.ndarray]) -> None:
        import tvm

        self._host_inputs = [np.array(a, copy=True) for a in arrays[: self.n_in]]
        self._inputs = [tvm.runtime.tensor(a, self.dev) for a in self._host_inputs]
        self.preproc = None  # timing is armed again for new arrays

    def run(self) -> None:
        out = self.vm["main"](*self._inputs)
        outs = list(out) if not hasattr(out, "numpy") else [out]
        self._outputs = [o.numpy() for o in outs]
        self.dev.sync()

    def download(self) -> list[np.ndarray]:
        return [t.numpy() for t in self._inputs] + self._outputs

    def arm(self, outputs: Sequence[int]) -> None:
        """Time every later call with the preproc of leka.runners.poison before it, as kernels are: the inputs
        a fresh mix of the uploaded ones and their alternate, so a graph that keeps state between calls
        (workspace memory the runtime hands back) meets new inputs on every timed call. Its outputs are
        allocated by each call: `outputs` (the kernels' output positions) has nothing to poison here."""
        from leka.runners.poison import Preproc

        self.preproc = Preproc(self.vm.module, "main", self._inputs, self.params, [], self.dev, callback=True,
                               graph_outputs=self._stateful_outputs)
        self.vm.set_input("main", *self._inputs)  # the VM keeps these tensors: the preproc rewrites them in place

    def _stateful_outputs(self) -> list:
        out = self.vm.get_outputs("main")
        return [out] if hasattr(out, "numpy") else list(out)

    def time(self, number: int, final: bool = False) -> float:
        """Mean seconds per call over `number` calls timed by the VM's time_evaluator (a C++ loop), one call
        per repeat, armed: the preproc before each, untimed, and the outputs of timed calls picked at random
        kept for the parent to check (stateful calls: the VM keeps the last outputs). `final`: the preproc restores the uploaded
        inputs, and one more untimed call leaves the outputs that the parent checks."""
        if self.preproc is None:
            timer = self.vm.time_evaluator("main", self.dev, number=number, repeat=1)
            return float(timer(*self._inputs).mean)
        timer, args = self.preproc.timer(number, final)
        seconds = float(np.mean(timer(*args).results))
        if final:
            self.run()
        return seconds


def load_graph(artifact: Any, target, args: Sequence[tuple]) -> GraphExec:
    return GraphExec(getattr(artifact, "executable", artifact), target, args)
