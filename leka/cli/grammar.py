"""The grammar every `leka` subcommand shares, written once: GRAMMAR_TEXT is what `leka --help` shows and
the README's "Command-line grammar" section repeats; tests/test_cli_grammar.py walks every subcommand."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

LATEST = True  # the value of a bare --resume: the latest unfinished run

GRAMMAR_TEXT = """options with one meaning wherever they appear:
  -o, --out PATH      where the command writes its output (a file or a folder)
  --resume [RUN]      continue RUN (a unique prefix is enough); alone: the
                      latest unfinished run
  --json              the result as JSON on stdout (progress goes to stderr);
                      without it, short tables for people
  --llm PROVIDER:MODEL  the model, in every command that can use one
                      (without it: the offline proposer)
  --time-runs N       time by a count of runs (`leka run`)
  --time-s S          time by seconds (`leka optimize`); the old --time still
                      works, with a warning
  --plain, --tsv      tables as aligned text or tab-separated values"""


def add_out(p: Any, help: str, *aliases: str, **kw: Any) -> None:
    """-o/--out PATH (and older spellings of the same option, which mean the same)."""
    p.add_argument("-o", "--out", *aliases, dest="out", metavar="PATH", help=help, **kw)


def add_resume(p: Any, what: str, metavar: str = "RUN", help: str | None = None) -> None:
    p.add_argument("--resume", nargs="?", const=LATEST, default=None, metavar=metavar,
                   help=help or f"continue RUN ({what}; a unique prefix is enough); without RUN: the latest "
                                "unfinished one")


def add_json(p: Any, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout (default: text for people)")


def add_llm(p: Any, what: str = "the model proposer (default: the offline one)") -> None:
    p.add_argument("--llm", metavar="PROVIDER:MODEL",
                   help=f"{what}: openai:M, anthropic:M, compat:M (+ --base-url), local:gemma3-270m, replay:PATH")
    p.add_argument("--base-url", help="OpenAI-compatible server URL for --llm compat:MODEL (vLLM, Ollama, llama.cpp)")


class _Deprecated(argparse.Action):
    """An old spelling: stores into the new option's dest and says, in one line, what to write instead."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kw: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        print(f"leka: warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_deprecated(p: Any, old: str, new: str, dest: str, type: Any) -> None:
    p.add_argument(old, dest=dest, type=type, action=_Deprecated, new=new, help=argparse.SUPPRESS)


def file_before_resume(args: Any, name: str, what: str) -> None:
    """`leka optimize --resume m.onnx` (written when --resume was a switch): a file that --resume took as its
    RUN is the command's FILE argument, and --resume the bare switch. A missing FILE is a one-line error."""
    from pathlib import Path

    from leka.errors import LekaError

    if getattr(args, name) is None and isinstance(args.resume, str) and Path(args.resume).is_file():
        setattr(args, name, args.resume)
        args.resume = LATEST
    if getattr(args, name) is None:
        raise LekaError(f"give {name.upper()}, {what}")


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def latest_unfinished(runs: list[dict[str, Any]], finished: set[str], what: str) -> str:
    """The run id a bare --resume means: the newest run (`runs` newest first) not in a finished status."""
    from leka.errors import LekaError

    for r in runs:
        if r.get("status") not in finished:
            return str(r["run_id"])
    raise LekaError(f"no unfinished {what} to resume here (give --resume RUN)")
