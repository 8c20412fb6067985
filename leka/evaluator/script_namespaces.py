"""Which dotted names of the T./R./I. namespaces a candidate's TVMScript may use.

The namespaces are TVM's script parser modules. Besides the IR-building functions, types and dtype
constructors a script needs, they hold parser machinery a script must not reach: submodules
(``T.parser``, ``T.utils`` — whose globals lead to ``inspect``, ``os`` ...), decorators that run Python
(``T.macro``, ``T.jit``, ``T.inline``, ``I.pyfunc``), raw Python values (``T.meta_var``), calls of
Python from the graph (``R.call_py_func``) and external source code (``T.call_kernel``) plus the
backend intrinsic namespaces (inline PTX/CUDA source; no shipped or printed candidate uses them). A
name is resolved against the installed TVM once (``getattr`` on modules and classes only, never a
call) and the answer is cached.
"""
from __future__ import annotations

import functools
import types
from typing import Any

ROOTS = frozenset({"T", "R", "I", "Axis"})
_DENY = {
    "T": {"jit", "inline", "macro", "meta_var", "prim_func", "call_kernel", "buffer_proxy", "frame_scope",
          "seq_scope", "TYPE_CHECKING", "cuda", "ptx", "ptx_legacy", "nvshmem", "nki", "metal", "webgpu",
          "s_tir", "smem", "tmem", "constexpr"},
    "R": {"function", "call_py_func", "TYPE_CHECKING", "dist", "distributed"},
    "I": {"ir_module", "pyfunc", "meta_var", "def_function", "decl_function"},
    "Axis": {"register", "reg_dict"},
}
# Submodules that are namespaces of IR operators (R.nn.conv2d ...); every other module is refused.
_OP_SUBMODULES = {"R": {"nn", "image", "vision", "memory", "builtin", "vm", "grad", "ccl"}}
_DECORATOR_ONLY = {"T.prim_func": "@T.prim_func", "R.function": "@R.function", "I.ir_module": "@I.ir_module"}


class NamespacePolicy:
    def __init__(self, roots: dict[str, Any]):
        self.roots = roots

    @functools.lru_cache(maxsize=4096)
    def why_not(self, dotted: str) -> str | None:
        """None when the attribute chain `dotted` (e.g. 'T.axis.spatial') may be used, else the reason."""
        parts = dotted.split(".")
        root = parts[0]
        if len(parts) == 1:
            return f"'{root}' may only be used as a namespace ({root}.name)"
        if dotted in _DECORATOR_ONLY:
            return f"'{dotted}' is only allowed as the decorator {_DECORATOR_ONLY[dotted]}"
        obj = self.roots[root]
        for depth, name in enumerate(parts[1:], start=1):
            shown = ".".join(parts[: depth + 1])
            if name.startswith("_") or (depth == 1 and name in _DENY.get(root, ())):
                return f"'{shown}' is not allowed in candidate TVMScript"
            if depth > 1 and not _is_namespace(obj, root):
                return f"'{shown}' is not allowed (attributes of '{'.'.join(parts[:depth])}' are not a namespace)"
            try:
                obj = getattr(obj, name)
            except Exception:  # noqa: BLE001  (any failure: the name does not exist)
                return f"'{shown}' is not a TVMScript name"
            if isinstance(obj, types.ModuleType) and not (depth == 1 and name in _OP_SUBMODULES.get(root, ())):
                return f"'{shown}' is a module of TVM's parser, not allowed in candidate TVMScript"
        return None

    def why_not_call(self, dotted: str) -> str | None:
        why = self.why_not(dotted)
        if why is None and isinstance(self._resolve(dotted), types.ModuleType):
            return f"'{dotted}' is not callable"
        return why

    def _resolve(self, dotted: str) -> Any:
        obj = self.roots[dotted.split(".")[0]]
        for name in dotted.split(".")[1:]:
            obj = getattr(obj, name)
        return obj


def _is_namespace(obj: Any, root: str) -> bool:
    """Attributes of obj may be chained: an allowed operator submodule, or a TVM class/namespace object."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__.startswith("tvm.")
    if isinstance(obj, type):
        return obj.__module__.startswith("tvm.")
    return False


@functools.lru_cache(maxsize=1)
def namespace_policy() -> NamespacePolicy:
    from tvm.script.parser import ir as I  # noqa: N812
    from tvm.script.parser import relax as R  # noqa: N812
    from tvm.script.parser import tirx as T  # noqa: N812
    from tvm.tirx.layout import Axis

    return NamespacePolicy({"T": T, "R": R, "I": I, "Axis": Axis})
