"""`leka optimize` on the transformer encoder block (leka/optimize/transformer_models.py, [1,64,128], opset 17)
from several checkouts, one after another in this session, each with a fresh LEKA_HOME and db, the same command:

  python experiments/encoder_block_ab.py /work/main /work/wt-h22c [--budget minutes=3] [--out DIR]

Prints per checkout: opt/ORT, tvm-dlight/ORT and tvm-naive/ORT (medians of `leka optimize`'s own interleaved
latency rounds), the budget spent, and per kernel (largest share first) its decision, time and rule. The host
is shared: the load average is printed before each run."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(checkout: Path, model: Path, out: Path, budget: str) -> dict:
    home = out / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout), "LEKA_HOME": str(home)}
    cmd = [sys.executable, "-m", "leka.cli.main", "optimize", str(model), "--budget", budget, "-o",
           str(out / "artifact"), "--db", str(home / "tuning.db"), "--quiet"]
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    return json.loads((out / "artifact" / "manifest.json").read_text())


def report(name: str, m: dict) -> None:
    if "error" in m:
        print(f"{name}: failed: {m['error']}")
        return
    lat = {k: v["median_ms"] for k, v in m["latency"].items()}
    ort = lat["onnxruntime"]
    print(f"{name}: opt {lat['optimized']:.4f} ms, ORT {ort:.4f} ms: opt/ORT {lat['optimized'] / ort:.2f}, "
          f"dlight/ORT {lat['tvm-dlight'] / ort:.2f}, naive/ORT {lat['tvm-naive'] / ort:.2f}; "
          f"budget {m['budget']['spec']} spent {m['budget']['spent_summary']}")
    for k in m["kernels"]:
        ms = f"{k['candidate_ms']:.4f} ms" if k.get("candidate_ms") else "default"
        rule = (k.get("detail") or {}).get("rule") or ""
        print(f"   {k['name'][:44]:44s} x{k['weight']} share {k['share']:.3f} {ms:>11s} {rule:22s} {k['decision']}")


def main() -> int:
    import onnx

    from leka.optimize.transformer_models import encoder_block

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--budget", default="minutes=3")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="encoder_ab_"))
    model = out / "encoder_block.onnx"
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(encoder_block(), model)
    results = []
    for i, checkout in enumerate(a.checkouts):
        print(f"load average before {checkout}: {os.getloadavg()}", flush=True)
        results.append((str(checkout), run(checkout.resolve(), model, out / f"run{i}", a.budget)))
    for name, m in results:
        report(name, m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
