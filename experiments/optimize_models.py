"""End-to-end benchmark of `leka optimize`: median latency of the optimised model against tvm-naive (default
build, no tuning), tvm-dlight (default build with dlight) and ONNX Runtime, measured alternately in one
process with the same thread count (the artifact's report), for the four MLPerf Tiny models of the suite and
two CNNs (SqueezeNet-class, MobileNet-style), all built with onnx.helper (leka/optimize/demo_models.py).

Goal (issue 11): optimised / ONNX Runtime <= 1.0 on host-cpu within 10 minutes of optimisation on 2 cores.
The ratio is reported per model, whatever it is; the machine's load average is printed before and after.

Usage: python experiments/optimize_models.py [--budget minutes=10] [--models kws-dscnn,...] [--jobs 1]
       [--out experiments/results/optimize_models_DATE] [--db PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    from leka.optimize.demo_models import MODELS, write

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="minutes=10", help="leka optimize budget per model (default minutes=10)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated (default {','.join(MODELS)})")
    ap.add_argument("--method", default="leka")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--time", type=float, default=2.0, help="seconds per build in the latency comparison")
    ap.add_argument("--db", help="tuning db (default: a fresh one in the output folder, so nothing is reused)")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "results" /
                                         f"optimize_models_{time.strftime('%Y-%m-%d')}"))
    args = ap.parse_args()

    out = Path(args.out)
    (out / "models").mkdir(parents=True, exist_ok=True)
    db = args.db or str(out / "tuning.db")
    rows = []
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}", flush=True)
    for name in args.models.split(","):
        rows.append(optimize_one(name, write(name, out / "models"), out, args, db))
    print(f"load average after: {os.getloadavg()}")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    table = _table(rows, args)
    (out / "results.md").write_text(table)
    print(table)
    return 0


def optimize_one(name: str, model: Path, out: Path, args: argparse.Namespace, db: str,
                 extra: list[str] | None = None) -> dict:
    """`leka optimize MODEL` in a subprocess (args: budget, method, jobs, time); the manifest's figures as a row
    ({"model", "error", "wall_s"} when it fails)."""
    from leka.optimize.timing_verdict import spread, verdict, warnings

    art = out / f"{name}.leka"
    t0 = time.time()
    cmd = [sys.executable, "-m", "leka.cli.main", "optimize", str(model), "-o", str(art), "--budget", args.budget,
           "--method", args.method, "--jobs", str(args.jobs), "--db", db, "--time-s", str(args.time), "--quiet",
           *(extra or [])]
    print(f"== {name}: {' '.join(cmd[3:])}", flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        row = {"model": name, "error": (r.stderr.strip().splitlines() or ["?"])[-1], "wall_s": wall}
        print(f"   failed: {row['error']}", flush=True)
        return row
    m = json.loads((art / "manifest.json").read_text())
    if not m.get("latency"):  # built and verified, the comparison cut at the budget's deadline
        row = {"model": name, "error": m.get("latency_cut") or "not timed", "wall_s": wall, "built": True,
               "max_abs_err": m["verification"].get("max_abs_err")}
        print(f"   built and verified, {row['error']}", flush=True)
        return row
    lat = {k: v["median_ms"] for k, v in (m.get("latency") or {}).items()}
    row = {"model": name, "wall_s": wall, "latency_ms": lat,
           "spread": {k: spread(v) for k, v in m["latency"].items()},  # across rounds (timing_verdict)
           "verdict": {k: verdict(m["latency"]["optimized"], v) for k, v in m["latency"].items()
                       if k != "optimized"}, "warnings": warnings(m["latency"], m.get("latency_host")),
           "kernels_replaced": sum(1 for k in m["kernels"] if k["decision"].endswith("replaced")),
           "kernels": len(m["kernels"]), "budget_spent": m["budget"]["spent"],
           "max_abs_err": m["verification"].get("max_abs_err"), "load_after": os.getloadavg()[0]}
    row["references_failed"] = m.get("references_failed") or {}  # a comparison build not built: no ratio to it
    for base in ("onnxruntime", "tvm-naive", "tvm-dlight"):
        row[f"opt/{base}"] = lat["optimized"] / lat[base] if base in lat else None
    print(f"   {_line(row)}", flush=True)
    return row


def _ms(lat: dict, name: str) -> str:
    """A build's ms, or '-' when it was not built (the manifest's references_failed says why)."""
    return f"{lat[name]:.3f}" if name in lat else "-"


def _line(r: dict) -> str:
    lat = r["latency_ms"]
    return (f"optimized {lat['optimized']:.3f} ms | naive {_ms(lat, 'tvm-naive')} | dlight {_ms(lat, 'tvm-dlight')} | "
            f"ORT {lat['onnxruntime']:.3f} | opt/ORT {r['opt/onnxruntime']:.2f} | "
            f"{r['kernels_replaced']}/{r['kernels']} kernels replaced | {r['wall_s'] / 60:.1f} min")


def _table(rows: list[dict], args: argparse.Namespace) -> str:
    head = ("| model | optimized ms | tvm-naive ms | tvm-dlight ms | ONNX Runtime ms | opt/ORT | opt/naive | "
            "kernels replaced | wall min |\n|---|---|---|---|---|---|---|---|---|")
    title = f"# leka optimize vs ONNX Runtime (budget {args.budget}, method {args.method}, jobs {args.jobs})"
    lines = [title, "", head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | failed: {r['error']} |||||||| {r['wall_s'] / 60:.1f} |")
            continue
        lat = r["latency_ms"]
        naive = f"{r['opt/tvm-naive']:.2f}" if r["opt/tvm-naive"] is not None else "-"
        lines.append(f"| {r['model']} | {lat['optimized']:.3f} | {_ms(lat, 'tvm-naive')} | {_ms(lat, 'tvm-dlight')} | "
                     f"{lat['onnxruntime']:.3f} | {r['opt/onnxruntime']:.2f} | {naive} | "
                     f"{r['kernels_replaced']}/{r['kernels']} | {r['wall_s'] / 60:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
