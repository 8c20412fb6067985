"""Taking a result away: a tuned kernel as a candidate file (TVMScript with its `# leka:` header, so
`leka eval FILE` re-checks it) and as a library built for its target.

Building parses TVMScript, which the main process never does for candidate code (docs/architecture.md,
trust boundaries): `export_library` runs the parse, `leka.compiler.build` and `Artifact.export` in a
child process and reports one line back.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import re
from pathlib import Path
from typing import Any

from leka.candidate import HEADER_RE
from leka.errors import LekaError

EXPORT_TIMEOUT_S = 600.0


class ExportError(LekaError):
    pass


def header_target(spec: Any) -> str:
    """A target spec as one header token: a preset name, or a TVM target dict as compact JSON."""
    if isinstance(spec, dict):
        return json.dumps(spec, separators=(",", ":"), sort_keys=True)
    text = str(spec)
    if text.lstrip().startswith("{"):
        try:
            return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True)
        except json.JSONDecodeError:
            pass
    return text


def with_header(source: str, task_id: str, target_spec: Any, note: str = "") -> str:
    """The candidate file text: `# leka: task=ID target=SPEC` first (replacing an existing header)."""
    body = "\n".join(ln for ln in source.splitlines() if not HEADER_RE.match(ln.strip()))
    head = f"# leka: task={task_id} target={header_target(target_spec)}"
    return head + "\n" + (f"# {note}\n" if note else "") + body.rstrip("\n") + "\n"


def write_kernel(path: str | Path, source: str, task_id: str, target_spec: Any, note: str = "") -> Path:
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(with_header(source, task_id, target_spec, note))
    except OSError as e:
        raise ExportError(f"cannot write {out}: {e.strerror or e}") from None
    return out


def ir_script(ir_json: dict[str, Any], task: Any, target: Any) -> str:
    """The flat TVMScript of a stored layered IR (the agent's best_ir or a proposal's ir)."""
    from leka.ir import CandidateIR

    try:
        return CandidateIR.from_json(ir_json, task).to_tvmscript(target)
    except Exception as e:  # noqa: BLE001 - IR errors of many kinds; one line for the user
        raise ExportError(f"cannot print the kernel as TVMScript: {type(e).__name__}: {e}".splitlines()[0]) \
            from None


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "kernel"


def _build_child(source: str, target_spec: Any, path: str, conn: Any) -> None:
    try:
        from leka.compiler import build
        from leka.evaluator.worker import _parse  # the worker's parser: one way to read candidate text

        art = build(_parse(source), target_spec)
        out = art.export(path)
        conn.send({"ok": True, "path": str(out), "compile_s": art.compile_s, "notes": list(art.notes)})
    except Exception as e:  # noqa: BLE001 - reported as one line by the parent
        msg = str(e).strip().splitlines()
        conn.send({"ok": False, "error": f"{type(e).__name__}: {msg[0] if msg else ''}"[:400]})


def export_library(source: str, target_spec: Any, path: str | Path,
                   timeout_s: float = EXPORT_TIMEOUT_S) -> dict[str, Any]:
    """Build `source` for the target and write a loadable library at `path`, in a child process.
    Returns {"path", "compile_s", "notes"}; raises ExportError with one line on failure."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_build_child, args=(source, target_spec, str(path), child), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            raise ExportError(f"building {path} took longer than {timeout_s:.0f} s")
        reply = parent.recv()
    except EOFError:
        raise ExportError(f"the build process for {path} died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if not reply["ok"]:
        raise ExportError(f"cannot build {path}: {reply['error']}")
    return reply
