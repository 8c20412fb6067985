"""Parse TVMScript from outside (a candidate, a model's reply): the AST allow-list, then TVM's parser with
no Python builtins reachable.

TVM 0.27's parser (tvm/script/parser/core/evaluator.py) evaluates each expression with ``eval(code,
value_table)``, where the value table is the parser's variable table seeded from ``extra_vars``; a name
missing from it falls back to the evaluator module's own ``__builtins__`` (``_get_builtin_or_none``), and
assignment targets are bound with ``exec(code, {}, locals)``, which gives the code the real builtins.
Here the table holds only T/I/R/Axis plus ``"__builtins__": {}``, the builtin fallback answers None, and
assignment targets are restricted to names, so even text that slipped past ``check_script`` could not
name ``open`` or ``__import__``. The allow-list (no dunder attributes, no calls outside the namespaces)
remains the main defence: attribute chains on literals need no builtins.
"""
from __future__ import annotations

import ast
import contextlib
import threading
from typing import Any, Iterator

from leka.evaluator.script_guard import ScriptRejected, check_limits, checked_tree, is_reserved_name

_PATCH_LOCK = threading.RLock()


class ScriptParseError(ScriptRejected):
    """Text within the allowed subset that TVM's parser (or its well-formedness check) refuses."""


def safe_from_source(text: str) -> Any:
    """`tvm.script.from_source` for untrusted text: ScriptRejected (one line) for anything outside the
    subset, ScriptParseError for text TVM refuses; returns the PrimFunc or IRModule."""
    tree = checked_tree(text)
    return _parse_without_builtins(_comment_out_imports(text, tree))


def trusted_from_source(text: str) -> Any:
    """`tvm.script.from_source` for text the package printed itself, with the size bounds only (an IR that
    grew past them is refused before the parser spends minutes on it)."""
    import tvm

    check_limits(text)
    return tvm.script.from_source(text)


def _comment_out_imports(text: str, tree: ast.Module) -> str:
    """TVM's parser refuses import statements; the checked ones are commented out (line numbers stay)."""
    lines = text.splitlines(keepends=True)
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            for i in range(st.lineno - 1, (st.end_lineno or st.lineno)):
                lines[i] = "# " + lines[i]
    return "".join(lines)


def parse_environment() -> dict[str, Any]:
    """The only names the parsed text can resolve that it does not bind itself."""
    from tvm.script.parser import ir, relax
    from tvm.script.parser import tirx as tirx_parser
    from tvm.tirx.layout import Axis

    return {"T": tirx_parser, "I": ir, "R": relax, "Axis": Axis, "__builtins__": {}}


def _parse_without_builtins(text: str) -> Any:
    from tvm.script.parser.core.entry import parse

    from leka.errors import error_line

    try:
        with _builtins_unreachable():
            return parse(text, extra_vars=parse_environment())
    except ScriptRejected:
        raise
    except RecursionError:
        raise ScriptParseError("not valid TVMScript: nested too deeply for TVM's parser") from None
    except MemoryError:
        raise ScriptParseError("not valid TVMScript: the parser ran out of memory") from None
    except Exception as e:  # noqa: BLE001  (TVM raises many types; all mean "not valid TVMScript")
        raise ScriptParseError(f"not valid TVMScript: {error_line(e)}") from None


@contextlib.contextmanager
def _builtins_unreachable() -> Iterator[None]:
    from tvm.script.parser.core import evaluator

    with _PATCH_LOCK:
        saved = evaluator._get_builtin_or_none, evaluator._eval_assign
        evaluator._get_builtin_or_none = _no_builtin
        evaluator._eval_assign = _names_only_assign(saved[1])
        try:
            yield
        finally:
            evaluator._get_builtin_or_none, evaluator._eval_assign = saved


def _no_builtin(name: str) -> None:
    return None


def _names_only_assign(assign: Any) -> Any:
    """TVM binds for/with/assignment targets by exec-ing `target = value` with the real builtins; a target
    that is not made of plain names (an index or attribute expression would be evaluated) is refused."""
    from tvm.script.parser.core import doc

    def checked(target: Any, source: Any) -> dict[str, Any]:
        node = doc.from_doc(target)
        if not _plain_target(node):
            raise ScriptRejected(f"assignment target '{ast.unparse(node)[:60]}' must be made of names")
        return assign(target, source)

    return checked


def _plain_target(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return not is_reserved_name(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_target(e) for e in node.elts)
    return False
