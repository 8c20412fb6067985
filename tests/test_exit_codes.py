"""Exit codes: one definition (leka.errors.ExitCode), listed by `leka --help` and tabled in the README."""
import re
from pathlib import Path

from leka.budget import BudgetExceeded
from leka.cli import main as cli
from leka.errors import EXIT_MEANINGS, ExitCode, LekaError, NotRunnableError
from leka.optimize import VerificationError

README = Path(__file__).resolve().parents[1] / "README.md"


def test_codes_are_the_table():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 70] and set(EXIT_MEANINGS) == set(ExitCode)
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", README.read_text(), re.M)
    assert [int(c) for c, _ in rows] == [int(c) for c in ExitCode]


def test_help_lists_every_code(capsys):
    text = cli.build_parser().format_help()
    for code, meaning in EXIT_MEANINGS.items():
        assert f"  {int(code):<3} {meaning}" in text


def test_errors_carry_their_code():
    assert LekaError("x").exit_code == ExitCode.BAD_INPUT
    assert NotRunnableError("x").exit_code == ExitCode.NOT_RUNNABLE
    assert BudgetExceeded("compiles", 1, 1, 1).exit_code == ExitCode.BUDGET
    assert VerificationError("x").exit_code == ExitCode.FAILED


def test_a_bug_is_70_in_one_line(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("first line\nsecond line")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.delenv("LEKA_DEBUG", raising=False)
    parser.set_defaults(func=boom)
    assert cli.main([]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: first line" in err
