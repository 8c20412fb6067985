"""`leka gpu-bundle`: bad arguments are one-line errors; the bundle keeps the runtime and drops the compiler."""
from __future__ import annotations

import zipfile

import pytest

from leka.cli.main import main
from leka.errors import LekaError
from leka.remote import bundle


@pytest.mark.parametrize("argv", [["--python", "3.x"], ["--arch", "riscv64"]])
def test_bad_arguments_exit_2(argv, tmp_path, capsys):
    assert main(["gpu-bundle", "-o", str(tmp_path / "b"), *argv]) == 2
    assert "leka: error:" in capsys.readouterr().err


def test_extract_keeps_runtime_drops_compiler(tmp_path):
    whl = tmp_path / "apache_tvm-0-py3-none-manylinux_2_28_aarch64.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for name in ("tvm/__init__.py", "tvm/lib/libtvm_runtime.so", "tvm/lib/libtvm_compiler.so",
                     "tvm/__pycache__/x.pyc", "apache_tvm-0.dist-info/WHEEL"):
            zf.writestr(name, "x")
    bundle._extract_tvm(whl, tmp_path / "out")
    got = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert got == ["tvm/__init__.py", "tvm/lib/libtvm_runtime.so"]


def test_missing_wheel_is_a_leka_error(tmp_path, monkeypatch):
    class Failed:
        returncode, stderr = 1, "ERROR: No matching distribution found for apache-tvm-ffi==9.9"
    monkeypatch.setattr(bundle.subprocess, "run", lambda *a, **k: Failed())
    with pytest.raises(LekaError, match="no apache-tvm-ffi==9.9 wheel for Python 3.12 on aarch64"):
        bundle._pip_download("apache-tvm-ffi==9.9", "3.12", "aarch64", tmp_path, implementation="cp")
