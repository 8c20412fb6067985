"""CPU runner: TVM runtime on tvm.cpu()."""
from __future__ import annotations

from leka.errors import NotRunnableError

from .tvm_device import TVMLoaded


class LLVMRunner:
    name = "llvm"

    def __init__(self, preset):
        self.preset = preset

    def load(self, artifact) -> TVMLoaded:
        import tvm

        if artifact.family != "cpu":
            raise NotRunnableError(f"the llvm runner runs CPU artifacts, not {artifact.family}")
        return TVMLoaded(artifact, tvm.cpu(0))
