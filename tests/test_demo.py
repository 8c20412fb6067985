"""`leka demo`, what `make demo` runs, end to end on its bundled model with the smallest budget: the model is
optimised, verified against ONNX Runtime, compared with the default builds, and its artifact run by `leka run`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_smoke(tmp_path):
    env = dict(os.environ, LEKA_HOME=str(tmp_path / "home"))
    r = subprocess.run([sys.executable, "-m", "leka.cli.main", "demo", "--workdir", str(tmp_path / "demo"),
                        "--model-budget", "compiles=1,measurements=1"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "verified against ONNX Runtime" in r.stdout and "check passed" in r.stdout
    assert "onnxruntime" in r.stdout and (tmp_path / "demo" / "kws-dscnn.leka" / "manifest.json").is_file()
