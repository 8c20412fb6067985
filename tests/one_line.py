"""What a one-line error looks like from the CLI (`leka: error: ...`, no traceback), for tests of bad input."""
from __future__ import annotations


def one_line_error(capsys, *words: str) -> str:
    """The CLI's stderr since the last read: exactly one `leka: error:` line holding every one of `words`."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("leka: error:") and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err
