"""Real converter output through `leka optimize` then `leka run`: every bundled torchvision export
(benchmark/models/*.structure.onnx, weights drawn from seed 0; leka/optimize/real_models.py), per model and
opset: import ok, optimise ok (tuned, rebuilt, verified against ONNX Runtime inside `leka optimize`), then
`leka run` on a fresh input (seed 1234, not one of the verification sets) compared here with ONNX Runtime on
the original model (max abs error and the error relative to max |ORT output|), and the end-to-end latency
from the artifact's report (optimised vs ONNX Runtime, measured alternately in one process, same threads).

Usage: python experiments/real_models.py [--budget minutes=0.5] [--models NAME,...] [--time 1]
       [--out experiments/results/real_models_DATE]
       python experiments/real_models.py --table-from A/results.json B/results.json   # one table of several runs
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _leka(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *argv], capture_output=True, text=True, cwd=ROOT)


def _last_line(r: subprocess.CompletedProcess) -> str:
    return (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["?"])[-1][:200]


def one(name: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime as ort

    from leka.errors import LekaError
    from leka.optimize.importer import import_model
    from leka.optimize.real_models import provenance, write

    model = write(name, out / "models")
    row: dict[str, Any] = {"model": name, **{k: v for k, v in provenance(_onnx_load(model)).items()
                                               if k in ("converter", "opset", "input")}}
    t0 = time.time()
    try:
        loaded, fused = import_model(model)
        row["import"] = f"ok ({sum(1 for gv in fused.functions if gv.name_hint != 'main')} fused functions)"
    except LekaError as e:
        row["import"] = f"failed: {e}"
        return row
    art = out / f"{name}.leka"
    r = _leka("optimize", str(model), "-o", str(art), "--budget", args.budget, "--db", str(out / "tuning.db"),
              "--time-s", str(args.time), "--quiet")
    row["optimize_s"] = round(time.time() - t0, 1)
    if r.returncode != 0:
        row["optimize"] = f"failed (exit {r.returncode}): {_last_line(r)}"
        return row
    m = json.loads((art / "manifest.json").read_text())
    row["optimize"] = "ok"
    row["kernels_replaced"] = f"{sum(1 for k in m['kernels'] if k['decision'].endswith('replaced'))}/{len(m['kernels'])}"
    row["budget_spent"] = m["budget"]["spent_summary"]
    row["verify_max_abs_err"] = max(m["verification"]["max_abs_err"].values())
    lat = {k: v["median_ms"] for k, v in (m.get("latency") or {}).items()}
    row.update({f"{k}_ms": v for k, v in lat.items()})
    if lat.get("onnxruntime"):
        row["opt/ORT"] = lat["optimized"] / lat["onnxruntime"]
    # leka run on a fresh input, compared here with ONNX Runtime on the original model
    rng = np.random.default_rng(1234)
    feeds = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in loaded.inputs}
    np.savez(out / f"{name}.in.npz", **feeds)
    r = _leka("run", str(art), "--inputs", str(out / f"{name}.in.npz"), "-o", str(out / f"{name}.out.npz"))
    if r.returncode != 0:
        row["run"] = f"failed (exit {r.returncode}): {_last_line(r)}"
        return row
    got = np.load(out / f"{name}.out.npz")
    exp = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)
    errs = [float(np.abs(got[n].reshape(e.shape) - e).max()) for n, e in zip(loaded.outputs, exp)]
    row["run_max_abs_err"] = max(errs)
    row["run_rel_err"] = max(errs) / max(float(np.abs(e).max()) for e in exp)
    return row


def _onnx_load(path: Path) -> Any:
    import onnx

    return onnx.load(str(path))


def _table(rows: list[dict[str, Any]], head: str) -> str:
    cols = ("model", "converter", "opset", "input", "import", "optimize", "kernels_replaced", "verify_max_abs_err",
            "run_max_abs_err", "run_rel_err", "optimized_ms", "tvm-naive_ms", "onnxruntime_ms", "opt/ORT", "optimize_s")
    fmt = {float: lambda v: f"{v:.3g}"}
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.get(type(r.get(c)), str)(r.get(c, "")) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    from leka.optimize.real_models import available

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="minutes=0.5", help="leka optimize budget per model (default minutes=0.5)")
    ap.add_argument("--models", default=",".join(available()), help="comma-separated (default: all bundled)")
    ap.add_argument("--time", type=float, default=1.0, help="seconds per build in the latency comparison")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "results" / f"real_models_{time.strftime('%Y-%m-%d')}"))
    ap.add_argument("--table-from", nargs="+", metavar="RESULTS_JSON",
                    help="only print the table of earlier runs' results.json files (runs split over processes; a model in "
                         "several: the later file's row)")
    args = ap.parse_args()
    if args.table_from:
        by_model = {r["model"]: r for f in args.table_from for r in json.loads(Path(f).read_text())}  # later wins
        rows = list(by_model.values())
        print(_table(rows, f"# real models: leka optimize then leka run, vs ONNX Runtime ({len(rows)} models)"))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = (f"# real models: leka optimize (budget {args.budget}, offline proposer) then leka run, vs ONNX Runtime\n\n"
            f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}")
    print(head, flush=True)
    rows = []
    for name in args.models.split(","):
        rows.append(one(name, out, args))
        print(json.dumps(rows[-1]), flush=True)
        (out / "results.json").write_text(json.dumps(rows, indent=2))
    table = _table(rows, head + f"; after: {os.getloadavg()}")
    (out / "results.md").write_text(table)
    print(table)
    return 0 if all(r.get("optimize") == "ok" and "run_max_abs_err" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
