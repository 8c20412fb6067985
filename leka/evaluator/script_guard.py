"""The TVMScript subset a candidate may be written in: a static AST allow-list, checked before parsing.

TVM's script parser evaluates the Python expressions of the text (attribute values, decorator arguments,
subscripts ...), so text from outside — a candidate file, a model's reply — could run Python code of its
choosing in whatever process parses it. ``check_script`` admits only what TVM's printer emits and the
project's candidates use:

- the module: the imports ``from tvm.script import tirx as T`` / ``ir as I`` / ``relax as R`` (and the
  printer's ``from tvm.tirx.layout import Axis``), then ``@T.prim_func`` functions or one
  ``@I.ir_module`` class of ``@T.prim_func`` / ``@R.function`` methods; decorator arguments are constants;
- inside functions: assignments, for/while/if/with/assert/return, calls of the T./R./I. namespaces (their
  public IR-building names, see ``namespace_policy``) and of the script's own functions, names the script
  binds, constants, arithmetic, comparisons, subscripts, slices, tuples, lists, and dict literals as direct
  arguments of namespace calls (``T.func_attr({...})``, ``annotations={...}``);
- nowhere: dunder names, attributes starting with ``_``, builtins, lambda, comprehensions, f-strings,
  starred arguments, ``**``, walrus, global/nonlocal/del/try/raise/import/nested def or class.

Size is bounded before ``ast.parse`` and the tree's depth after it (leka.evaluator.script_limits), so deep
or huge text is one ``ScriptRejected`` line, never a RecursionError.
``safe_from_source`` (leka.evaluator.safe_parse) runs this check and then TVM's parser without builtins.
"""
from __future__ import annotations

import ast
from typing import Iterable

from leka.evaluator.script_limits import (  # noqa: F401  (re-exported: the guard's public API)
    MAX_AST_DEPTH, MAX_BRACKET_DEPTH, MAX_CHARS, MAX_CONSTANT_BITS, MAX_TOKENS, ScriptRejected, check_depth,
    check_limits, constant_size, parse_python)
from leka.evaluator.script_limits import reject_at as _reject
from leka.evaluator.script_namespaces import ROOTS, namespace_policy

# (module, name, alias); `import tvm` and the older `tir as T` are tolerated: the parser never sees imports
# (safe_parse comments them out) and the names they would bind are not available to the script.
ALLOWED_IMPORTS = {("tvm.script", "tirx", "T"), ("tvm.script", "ir", "I"), ("tvm.script", "relax", "R"),
                   ("tvm.tirx.layout", "Axis", "Axis"), ("tvm.script", "tir", "T")}
FUNCTION_DECORATORS = {"T.prim_func", "R.function"}
MODULE_DECORATOR = "I.ir_module"
_SIMPLE_STATEMENTS = (ast.Pass, ast.Break, ast.Continue)


# -- the allow-list ------------------------------------------------------------------------------------

def check_script(text: str) -> None:
    """Raise ScriptRejected unless `text` is within the TVMScript subset described in the module doc."""
    checked_tree(text)


def checked_tree(text: str) -> ast.Module:
    """check_script, returning the checked tree."""
    tree = parse_python(text)
    _Checker(check_depth(tree)).check_module(tree)
    return tree


def __getattr__(name: str):
    # safe_from_source needs TVM, so it lives in safe_parse; it is importable from here too.
    if name == "safe_from_source":
        from leka.evaluator.safe_parse import safe_from_source

        return safe_from_source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dotted(node: ast.AST) -> str | None:
    """'T.axis.spatial' for an attribute chain on a plain name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _is_private(name: str) -> bool:
    """Attributes: anything starting with '_' (dunders, private TVM/parser internals)."""
    return name.startswith("_")


def is_reserved_name(name: str) -> bool:
    """Names: dunders (__import__, __builtins__ ...) and the parser's own temporaries (__tvm_tmp_value_0).
    The printer itself binds names like `_` and `__0`; a name is loadable only when the script binds it."""
    return (name.startswith("__") and name.endswith("__")) or name.startswith("__tvm")


class _Checker:
    def __init__(self, nodes: list[ast.AST]):
        self.functions: set[str] = set()   # the script's own def names (callable)
        self.classes: set[str] = set()
        self.bound: set[str] = set()       # every name the script binds
        assigns: list[tuple[str, list[ast.expr]]] = []  # (name assigned from, targets) of `x = Name`
        for n in nodes:
            if isinstance(n, ast.FunctionDef):
                self.functions.add(n.name)
            elif isinstance(n, ast.ClassDef):
                self.classes.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                self.bound.add(n.id)
            elif isinstance(n, ast.arg):
                self.bound.add(n.arg)
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Name):
                assigns.append((n.value.id, n.targets))
        self.bound |= self.functions | self.classes
        # `cls = Module` (the printer's alias for the module class): `cls.f(...)` calls a module function
        self.class_aliases = set(self.classes) | {
            t.id for source, targets in assigns if source in self.classes for t in targets if isinstance(t, ast.Name)}

    # module level
    def check_module(self, tree: ast.Module) -> None:
        for st in tree.body:
            if isinstance(st, ast.ImportFrom):
                self._check_import(st)
            elif isinstance(st, ast.Import) and [(a.name, a.asname) for a in st.names] == [("tvm", None)]:
                pass
            elif isinstance(st, ast.FunctionDef):
                self._check_function(st, {"T.prim_func"})
            elif isinstance(st, ast.ClassDef):
                self._check_module_class(st)
            elif not _is_docstring(st):
                raise _reject(st, f"{_kind(st)} outside a function is not allowed (only imports of T/I/R, "
                                  "@T.prim_func functions and an @I.ir_module class)")

    def _check_import(self, st: ast.ImportFrom) -> None:
        got = {(st.module, a.name, a.asname or a.name) for a in st.names}
        if st.level or not got <= ALLOWED_IMPORTS:
            bad = ", ".join(f"{m} import {n} as {a}" for m, n, a in sorted(got - ALLOWED_IMPORTS, key=str))
            raise _reject(st, f"import 'from {bad or st.module}' is not allowed (only 'from tvm.script "
                              "import tirx as T' / 'ir as I' / 'relax as R')")

    def _check_module_class(self, st: ast.ClassDef) -> None:
        if st.bases or st.keywords:
            raise _reject(st, f"class '{st.name}' may not have bases or keywords")
        self._check_decorators(st, st.decorator_list, {MODULE_DECORATOR})
        self._check_name_def(st, st.name)
        for item in st.body:
            if isinstance(item, ast.FunctionDef):
                self._check_function(item, FUNCTION_DECORATORS)
            elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Call) \
                    and (_dotted(item.value.func) or "").startswith("I."):
                self._check_expr(item.value)   # I.module_attrs({...}), I.module_global_infos(...)
            elif not _is_docstring(item):
                raise _reject(item, f"{_kind(item)} in the module class is not allowed (only @T.prim_func / "
                                    "@R.function methods)")

    def _check_decorators(self, st: ast.AST, decorators: list[ast.expr], allowed: set[str]) -> None:
        if len(decorators) != 1:
            raise _reject(st, f"'{getattr(st, 'name', '')}' needs exactly one decorator of "
                              f"{', '.join(sorted(allowed))}")
        d = decorators[0]
        call = d if isinstance(d, ast.Call) else None
        name = _dotted(call.func if call else d)
        if name not in allowed:
            raise _reject(d, f"decorator '{ast.unparse(d)[:80]}' is not allowed (allowed: "
                             f"{', '.join(sorted(allowed))})")
        if call is not None:
            if call.args or any(k.arg is None or not _is_plain_constant(k.value) for k in call.keywords):
                raise _reject(d, f"decorator '{name}' takes only keyword arguments with constant values")

    def _check_name_def(self, node: ast.AST, name: str) -> None:
        if is_reserved_name(name):
            raise _reject(node, f"name '{name}' is not allowed (no dunder names)")

    def _check_function(self, fn: ast.AST, decorators: set[str]) -> None:
        if not isinstance(fn, ast.FunctionDef):
            raise _reject(fn, f"{_kind(fn)} is not allowed")
        self._check_decorators(fn, fn.decorator_list, decorators)
        self._check_name_def(fn, fn.name)
        a = fn.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or a.kw_defaults:
            raise _reject(fn, f"function '{fn.name}': only plain parameters (no defaults, *args, **kwargs, "
                              "keyword-only or positional-only)")
        for arg in a.args:
            self._check_name_def(arg, arg.arg)
            if arg.annotation is not None:
                self._check_expr(arg.annotation)
        if fn.returns is not None:
            self._check_expr(fn.returns)
        self._check_body(fn.body)

    # statements
    def _check_body(self, body: Iterable[ast.stmt]) -> None:
        for st in body:
            self._check_stmt(st)

    def _check_stmt(self, st: ast.stmt) -> None:  # noqa: C901  (one branch per statement kind)
        if isinstance(st, ast.Assign):
            for t in st.targets:
                self._check_target(t, allow_subscript=True)
            self._check_expr(st.value)
        elif isinstance(st, ast.AnnAssign):
            if not isinstance(st.target, ast.Name):
                raise _reject(st, "an annotated assignment must assign a plain name")
            self._check_target(st.target)
            self._check_expr(st.annotation)
            if st.value is not None:
                self._check_expr(st.value)
        elif isinstance(st, ast.AugAssign):
            self._check_target(st.target, allow_subscript=True)
            self._check_binop(st, st.op)
            self._check_expr(st.value)
        elif isinstance(st, ast.For):
            self._check_for(st)
        elif isinstance(st, ast.While):
            if st.orelse:
                raise _reject(st, "while ... else is not allowed")
            self._check_expr(st.test)
            self._check_body(st.body)
        elif isinstance(st, ast.If):
            self._check_expr(st.test)
            self._check_body(st.body)
            self._check_body(st.orelse)
        elif isinstance(st, ast.With):
            for item in st.items:
                self._check_expr(item.context_expr)
                if item.optional_vars is not None:
                    self._check_target(item.optional_vars)
            self._check_body(st.body)
        elif isinstance(st, ast.Expr):
            self._check_expr(st.value)
        elif isinstance(st, ast.Return):
            if st.value is not None:
                self._check_expr(st.value)
        elif isinstance(st, ast.Assert):
            self._check_expr(st.test)
            if st.msg is not None:
                self._check_expr(st.msg)
        elif not isinstance(st, _SIMPLE_STATEMENTS):
            raise _reject(st, f"{_kind(st)} is not allowed in a TVMScript function")

    def _check_for(self, st: ast.For) -> None:
        if st.orelse:
            raise _reject(st, "for ... else is not allowed")
        self._check_target(st.target)
        it = st.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            self._check_call_arguments(it)   # the parser turns range(...) into a serial loop itself
        else:
            self._check_expr(it)
        self._check_body(st.body)

    def _check_target(self, t: ast.expr, allow_subscript: bool = False) -> None:
        if isinstance(t, ast.Name):
            self._check_name_def(t, t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._check_target(e)
        elif allow_subscript and isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            self._check_expr(t.value)
            self._check_expr(t.slice)
        else:
            raise _reject(t, f"assignment to '{ast.unparse(t)[:60]}' is not allowed (names, tuples of "
                             "names, or buffer[indices])")

    # expressions
    def _check_expr(self, e: ast.expr) -> None:  # noqa: C901
        if isinstance(e, ast.Constant):
            if not _is_plain_constant(e):
                raise _reject(e, f"constant of type {type(e.value).__name__} is not allowed")
        elif isinstance(e, ast.Name):
            self._check_load_name(e)
        elif isinstance(e, ast.Attribute):
            self._check_attribute(e)
        elif isinstance(e, ast.Call):
            self._check_call(e)
        elif isinstance(e, ast.BinOp):
            self._check_binop(e, e.op)
            self._check_expr(e.left)
            self._check_expr(e.right)
        elif isinstance(e, ast.UnaryOp):
            self._check_expr(e.operand)
        elif isinstance(e, ast.BoolOp):
            self._check_exprs(e.values)
        elif isinstance(e, ast.Compare):
            self._check_expr(e.left)
            self._check_exprs(e.comparators)
        elif isinstance(e, ast.IfExp):
            self._check_exprs([e.test, e.body, e.orelse])
        elif isinstance(e, ast.Subscript):
            self._check_expr(e.value)
            self._check_expr(e.slice)
        elif isinstance(e, ast.Slice):
            self._check_exprs([x for x in (e.lower, e.upper, e.step) if x is not None])
        elif isinstance(e, (ast.Tuple, ast.List)):
            self._check_exprs(e.elts)
        elif isinstance(e, ast.Dict):
            raise _reject(e, "a dict literal is only allowed as an argument of a T./R./I. call "
                             "(T.func_attr({...}), annotations={...})")
        else:
            raise _reject(e, f"{_kind(e)} is not allowed in TVMScript")

    def _check_exprs(self, es: Iterable[ast.expr]) -> None:
        for x in es:
            self._check_expr(x)

    def _check_binop(self, node: ast.AST, op: ast.operator) -> None:
        if isinstance(op, ast.Pow):
            raise _reject(node, "'**' is not allowed (use T.pow)")
        if isinstance(node, ast.BinOp) and isinstance(op, ast.Mult):
            for seq, count in ((node.left, node.right), (node.right, node.left)):
                small = isinstance(count, ast.Constant) and isinstance(count.value, int) and abs(count.value) <= 4096
                if isinstance(seq, (ast.List, ast.Tuple)) and not small:
                    raise _reject(node, "repeating a list or tuple ('[...] * n') needs a constant n <= 4096")
        if isinstance(node, ast.BinOp) and constant_size(node) > MAX_CONSTANT_BITS:
            raise _reject(node, f"constant arithmetic '{ast.unparse(node)[:40]}' is too large (the parser would "
                                "compute it in Python)")

    def _check_load_name(self, e: ast.Name) -> None:
        if is_reserved_name(e.id):
            raise _reject(e, f"name '{e.id}' is not allowed (no dunder names)")
        if e.id in ROOTS:
            raise _reject(e, f"'{e.id}' may only be used as a namespace ({e.id}.name)")
        if e.id not in self.bound:
            raise _reject(e, f"name '{e.id}' is not defined by the script (builtins and other globals are "
                             "not available; use the T./R./I. namespaces)")

    def _check_attribute(self, e: ast.Attribute) -> None:
        if _is_private(e.attr):
            raise _reject(e, f"attribute '{e.attr}' is not allowed (no attributes starting with '_')")
        dotted = _dotted(e)
        if dotted is not None and dotted.split(".", 1)[0] in ROOTS:
            why = namespace_policy().why_not(dotted)
            if why:
                raise _reject(e, why)
            return
        self._check_expr(e.value)

    def _check_call(self, e: ast.Call) -> None:
        f = e.func
        dotted = _dotted(f)
        if dotted is not None and dotted.split(".", 1)[0] in ROOTS - {"Axis"}:
            why = namespace_policy().why_not_call(dotted)
            if why:
                raise _reject(e, why)
            self._check_call_arguments(e, dicts=True)
            return
        own = isinstance(f, ast.Name) and f.id in self.functions
        own_method = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
            and f.value.id in self.class_aliases and f.attr in self.functions
        self._check_expr(f)  # names the construct first: a lambda, a dunder attribute, an unknown name
        if not (own or own_method):
            raise _reject(e, f"call of '{ast.unparse(f)[:60]}' is not allowed (only T./R./I. functions and "
                             "the script's own functions)")
        self._check_call_arguments(e)

    def _check_call_arguments(self, e: ast.Call, dicts: bool = False) -> None:
        for a in [*e.args, *(k.value for k in e.keywords)]:
            if isinstance(a, ast.Starred):
                raise _reject(a, "starred arguments (*x) are not allowed")
            if dicts and isinstance(a, ast.Dict):
                self._check_dict(a)
            else:
                self._check_expr(a)
        for k in e.keywords:
            if k.arg is None:
                raise _reject(k.value, "keyword unpacking (**x) is not allowed")
            if _is_private(k.arg):
                raise _reject(k.value, f"keyword '{k.arg}' is not allowed (no names starting with '_')")

    def _check_dict(self, d: ast.Dict) -> None:
        for k, v in zip(d.keys, d.values):
            if k is None:
                raise _reject(d, "dict unpacking (**x) is not allowed")
            self._check_expr(k)   # attribute names, or variables (T.Let(..., where={v: value}))
            if isinstance(v, ast.Dict):
                self._check_dict(v)
            else:
                self._check_expr(v)


def _is_plain_constant(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis
                                            or isinstance(e.value, (bool, int, float, complex, str)))


def _is_docstring(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)


def _kind(node: ast.AST) -> str:
    """A construct's name for messages: 'lambda', 'import statement', 'list comprehension' ..."""
    names = {"Lambda": "lambda", "ListComp": "list comprehension", "SetComp": "set comprehension",
             "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
             "JoinedStr": "f-string", "FormattedValue": "f-string", "NamedExpr": "':=' (walrus)",
             "Starred": "starred expression", "Set": "set literal", "Await": "await", "Yield": "yield",
             "YieldFrom": "yield from", "Import": "import statement", "ImportFrom": "import statement",
             "Global": "global statement", "Nonlocal": "nonlocal statement", "Delete": "del statement",
             "Try": "try statement", "TryStar": "try statement", "Raise": "raise statement",
             "ClassDef": "class definition", "FunctionDef": "function definition",
             "AsyncFunctionDef": "async function", "AsyncFor": "async for", "AsyncWith": "async with",
             "Match": "match statement", "Assign": "assignment", "Expr": "expression statement"}
    return names.get(type(node).__name__, type(node).__name__)
