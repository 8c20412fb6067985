"""User-facing errors: the CLI prints ``str(err)`` as one line and exits non-zero, no traceback.

Also the two ways a message becomes one line: `one_line` (any text, whitespace collapsed and capped) and
`error_line` (an exception: its type and its most informative line, TVM's errors being multi-line IR dumps).
"""
from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What `leka`'s exit status means, for every command (README "Exit codes", `leka --help`)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    NOT_RUNNABLE = 3
    BUDGET = 4
    INTERNAL = 70  # EX_SOFTWARE of sysexits.h


EXIT_MEANINGS = {
    ExitCode.OK: "ok",
    ExitCode.FAILED: "the thing judged failed: candidate wrong or slow, mismatch with ONNX Runtime, failed checks",
    ExitCode.BAD_INPUT: "bad input: usage, a malformed or unknown file, target, task or store",
    ExitCode.NOT_RUNNABLE: "not runnable here: the target needs other hardware (built, not run)",
    ExitCode.BUDGET: "the budget ran out first (what finished is kept; --resume continues)",
    ExitCode.INTERNAL: "internal error (a bug; LEKA_DEBUG=1 shows the traceback)",
}
EXIT_CODES_TEXT = "exit codes:\n" + "\n".join(f"  {int(c):<3} {m}" for c, m in EXIT_MEANINGS.items())


class LekaError(Exception):
    """Bad input or an unusable request (unknown target/task, malformed file ...)."""

    exit_code: int = ExitCode.BAD_INPUT


class UnknownTargetError(LekaError):
    pass


class UnknownTaskError(LekaError):
    pass


class CandidateFormatError(LekaError):
    """The candidate file is not TVMScript, or its signature does not match the task."""


class NotRunnableError(LekaError):
    """The target builds here but needs other hardware (a board, a GPU) to run."""

    exit_code = ExitCode.NOT_RUNNABLE


def one_line(text: object, limit: int = 400) -> str:
    """`text` (a message, an exception's message) on one line: whitespace collapsed, at most `limit` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def error_line(e: BaseException, limit: int = 500) -> str:
    """The exception's type and the line of its message that says what went wrong."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    for key in ("Error message:", "error:", "Error:", "ValueError:", "TypeError:"):
        for ln in lines:
            if key in ln:
                return f"{type(e).__name__}: {ln.split(key, 1)[-1].strip() or ln}"[:limit]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"[:limit]
