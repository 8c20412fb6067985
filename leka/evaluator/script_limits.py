"""Bounds on candidate text before and after ``ast.parse``, and the error every check of outside TVMScript
raises (``ScriptRejected``, one line). A text too large or nested too deeply for Python's or TVM's
recursive parsers is refused here in one line instead of a RecursionError or a parser that runs for
minutes; constant arithmetic that TVM's parser would compute in plain Python (``1 << (1 << 40)``,
``"a" * 10**9``) is bounded too."""
from __future__ import annotations

import ast
import re

from leka.errors import LekaError

MAX_CHARS = 2_000_000           # the largest printed suite schedule is ~0.1 MB
MAX_TOKENS = 400_000           # bounds the node count
MAX_BRACKET_DEPTH = 40         # printer output nests brackets < 20 deep
MAX_CONSTANT_BITS = 4096       # of Python-level constant arithmetic (1 << 40, "x" * 10**9 ...)
MAX_AST_DEPTH = 160            # printed suite scripts reach 63; TVM's recursive parser fails near 250

# String literals and comments, removed before counting brackets and tokens (an upper bound suffices).
_STRINGS_AND_COMMENTS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"'
                                   r"|'(?:[^'\\\n]|\\.)*'|#[^\n]*")
_BRACKET = re.compile(r"[()\[\]{}]")
_TOKEN = re.compile(r"\w+|[^\w\s]")


class ScriptRejected(LekaError):
    """Candidate text outside the TVMScript subset; the message names the construct and its line."""


def reject_at(node: ast.AST | SyntaxError | None, what: str) -> ScriptRejected:
    """ScriptRejected('line N: what') for the node's line (without it when the node has none)."""
    line = getattr(node, "lineno", None)
    return ScriptRejected(f"line {line}: {what}" if line else what)


# -- bounds before parsing -----------------------------------------------------------------------------

def check_limits(text: str) -> None:
    """Reject text whose size or bracket nesting would exhaust the Python parser (regex scan, no AST)."""
    if not isinstance(text, str):
        raise ScriptRejected(f"candidate text must be a string, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ScriptRejected(f"text has {len(text)} characters (limit {MAX_CHARS})")
    code = _STRINGS_AND_COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    n_tokens = len(_TOKEN.findall(code))
    if n_tokens > MAX_TOKENS:
        raise ScriptRejected(f"text has {n_tokens} tokens (limit {MAX_TOKENS})")
    depth = 0
    for m in _BRACKET.finditer(code):
        depth += 1 if m.group(0) in "([{" else -1
        if depth > MAX_BRACKET_DEPTH:
            line = code.count("\n", 0, m.start()) + 1
            raise ScriptRejected(f"line {line}: brackets nested deeper than {MAX_BRACKET_DEPTH}")


def parse_python(text: str) -> ast.Module:
    """``ast.parse`` within the bounds above; any parser failure is one ScriptRejected line."""
    check_limits(text)
    try:
        return ast.parse(text)
    except SyntaxError as e:
        raise reject_at(e, f"Python syntax error: {e.msg}") from None
    except (RecursionError, MemoryError) as e:
        raise ScriptRejected(f"nested too deeply for the Python parser ({type(e).__name__})") from None
    except (ValueError, OverflowError) as e:  # e.g. NUL bytes in the text
        raise ScriptRejected(f"not parseable as Python ({type(e).__name__}: {str(e)[:120]})") from None


def check_depth(tree: ast.AST, limit: int = MAX_AST_DEPTH) -> list[ast.AST]:
    """All nodes of `tree` (one iterative walk); ScriptRejected when it is deeper than `limit`."""
    nodes: list[ast.AST] = []
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        if d > limit:
            raise reject_at(node, f"expression nested deeper than {limit} levels")
        nodes.append(node)
        for name in node._fields:
            v = getattr(node, name, None)
            if isinstance(v, ast.AST):
                stack.append((v, d + 1))
            elif isinstance(v, list):
                stack.extend((c, d + 1) for c in v if isinstance(c, ast.AST))
    return nodes


def constant_size(e: ast.expr) -> int:
    """An upper bound on the bits (8 per character of a string) of a constant-only expression, which the
    parser computes in plain Python; 0 when it involves a name (IR arithmetic, built lazily by TVM)."""
    if isinstance(e, ast.Constant):
        v = e.value
        if isinstance(v, str):
            return 8 * len(v) + 1
        return abs(v).bit_length() + 1 if isinstance(v, int) and not isinstance(v, bool) else 64
    if isinstance(e, ast.UnaryOp):
        return constant_size(e.operand)
    if not isinstance(e, ast.BinOp):
        return 0
    left, right = constant_size(e.left), constant_size(e.right)
    if not (left and right):
        return 0
    if isinstance(e.op, ast.LShift):  # x << n: bits(x) + n, and n < 2**bits(n)
        n = e.right.value if isinstance(e.right, ast.Constant) and isinstance(e.right.value, int) else None
        return left + (n if n is not None and n >= 0 else 1 << min(right, 64))
    if isinstance(e.op, ast.Mult) and (_is_str(e.left) or _is_str(e.right)):  # "ab" * n
        text, count = (left, e.right) if _is_str(e.left) else (right, e.left)
        n = count.value if isinstance(count, ast.Constant) and isinstance(count.value, int) else None
        return text * (abs(n) if n is not None else 1 << min(min(left, right), 64))
    return left + right if isinstance(e.op, ast.Mult) else max(left, right) + 1


def _is_str(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return isinstance(e.value, str)
    return isinstance(e, ast.BinOp) and (_is_str(e.left) or _is_str(e.right))
