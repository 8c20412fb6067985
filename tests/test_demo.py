"""`leka demo`, what `make demo` runs, end to end on its bundled model with the smallest budget: the model is
optimised, verified against ONNX Runtime, compared with the default builds, and its artifact run by `leka run`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_smoke(tmp_path):
    """With --json the steps' own output (what a user reads) goes to stderr and stdout is one JSON report."""
    env = dict(os.environ, LEKA_HOME=str(tmp_path / "home"))
    r = subprocess.run([sys.executable, "-m", "leka.cli.main", "demo", "-o", str(tmp_path / "demo"),
                        "--model-budget", "compiles=1,measurements=1", "--json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "verified against ONNX Runtime" in r.stderr and "check passed" in r.stderr and "onnxruntime" in r.stderr
    said = json.loads(r.stdout)
    assert said["ok"] and said["optimize"]["exit"] == 0 and said["run"]["exit"] == 0
    assert (tmp_path / "demo" / "kws-dscnn.leka" / "manifest.json").is_file()
