"""`leka` command line. Each subcommand lives in its own module with ``register(subparsers)``;
the list below is the one place they are wired in. User errors (LekaError) print one line, no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from leka import __version__
from leka.cli.grammar import GRAMMAR_TEXT
from leka.errors import EXIT_CODES_TEXT, ExitCode, LekaError

# Subcommand modules, in --help order. Each defines register(subparsers) and sets func=handler(args)->int.
COMMANDS = [
    "leka.cli.targets_cmd",
    "leka.cli.eval_cmd",
    "leka.cli.bench_cmd",
    "leka.cli.demo_cmd",
    "leka.cli.tune_cmd", "leka.cli.trace_cmd",
    "leka.cli.experiment_cmd",
    "leka.cli.optimize_cmd", "leka.cli.run_cmd",
    "leka.cli.gpu_bundle_cmd", "leka.cli.remote_cmd",
    "leka.cli.llm_cmd",
]


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (subcommand parsers inherit the class)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` shows the usage)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="leka",
        description="LEKA: layered edge kernel agent and EdgeKernelBench over Apache TVM 0.27.",
        epilog=f"Run `leka COMMAND --help` for each command. Docs: docs/architecture.md\n\n{GRAMMAR_TEXT}\n\n"
               f"{EXIT_CODES_TEXT}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"leka {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return p


def _terminate_as_exit() -> None:
    """SIGTERM (a `timeout`, a scheduler) unwinds like Ctrl-C, so runs are marked interrupted, not left running."""
    import signal
    import threading

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    # TVM's excepthook hides messages unless asked; we print our own one-liners anyway.
    os.environ.setdefault("TVM_BACKTRACE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    _terminate_as_exit()
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.BAD_INPUT
    from leka.cli.llm_cmd import llm_scope

    try:
        with llm_scope(args):  # --llm local:MODEL: a model server for the command's duration
            return int(args.func(args) or 0)
    except LekaError as e:
        print(f"leka: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("leka: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `leka ... | head`: the reader left; nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # a bug, not bad input: still one line for the user, the traceback on request
        if os.environ.get("LEKA_DEBUG"):
            raise
        lines = str(e).strip().splitlines()
        print(f"leka: internal error: {type(e).__name__}: {lines[0] if lines else ''} "
              "(LEKA_DEBUG=1 shows the traceback)", file=sys.stderr)
        return ExitCode.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
