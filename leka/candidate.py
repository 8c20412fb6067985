"""Candidate files: a TVMScript file (the flat form of the layered IR) with a header line
``# leka: task=ID target=PRESET`` naming its task and target. Only the header and the Python syntax are
read here, within the size and nesting bounds of leka.evaluator.script_guard (a file too large or nested
too deeply is one CandidateFormatError line, never a RecursionError); the TVMScript itself is checked
against the allow-list and parsed by the evaluation worker, never in this process."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from leka.errors import CandidateFormatError
from leka.evaluator.script_guard import ScriptRejected, parse_python

HEADER_RE = re.compile(r"#\s*leka:\s*(.*)")


@dataclass(frozen=True)
class CandidateFile:
    path: str
    source: str
    task: str | None
    target: str | None


def parse_header(source: str) -> dict[str, str]:
    """key=value pairs from the first `# leka:` comment within the first 5 lines."""
    for line in source.splitlines()[:5]:
        m = HEADER_RE.match(line.strip())
        if m:
            return dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv)
    return {}


def load_candidate(path: str | Path) -> CandidateFile:
    p = Path(path)
    if not p.is_file():
        raise CandidateFormatError(f"{path}: no such file")
    try:
        source = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise CandidateFormatError(f"{path}: cannot read as text ({type(e).__name__})") from None
    try:
        tree = parse_python(source)  # syntax only, bounded: nothing is executed
    except ScriptRejected as e:
        raise CandidateFormatError(f"{path} is not TVMScript: {e}") from None
    if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.decorator_list for n in tree.body):
        raise CandidateFormatError(f"{path} is not TVMScript: no @T.prim_func function or @I.ir_module class")
    h = parse_header(source)
    return CandidateFile(str(p), source, h.get("task"), h.get("target"))
