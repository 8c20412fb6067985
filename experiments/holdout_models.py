"""Issue 22's acceptance benchmark: `leka optimize` on held-out models the rules were not developed on, each
timed side by side with ONNX Runtime and the default TVM builds in one run (the artifact's latency report:
alternating rounds, same thread count), and checked against ONNX Runtime.

Models (leka/optimize/holdout_models.py builds the first six with onnx.helper / ONNX Runtime's quantiser):
  encoder-opset17     transformer encoder block [1,64,128]: LayerNorm, MatMul, Softmax attention, Erf-GELU
  encoder-gelu20      the same at opset 20 with the Gelu op
  kws-lstm, kws-gru   49x10 MFCC -> LSTM / GRU (hidden 64) -> Gemm to 12 classes
  cnn-qdq, cnn-qop    a small CNN quantised by onnxruntime.quantization.quantize_static, QDQ / QOperator
  light_*             onnx's backend-test light models, when the installed onnx package ships them
  tv-*                the project's torchvision exports (benchmark/models, structure-only; weights drawn by
                      leka.optimize.real_models); torch itself is not needed
Per model: opt/ORT (optimised / ONNX Runtime), default/ORT (tvm-naive: TVM's default build, no tuning),
dlight/ORT, and the verification's max abs error vs ONNX Runtime; a table and results.json.

Usage: python experiments/holdout_models.py [--budget minutes=10] [--models encoder-opset17,kws-lstm,...]
       [--set built|all] [--jobs 1] [--out DIR] [--db PATH] [--list]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from optimize_models import optimize_one  # noqa: E402

BUILT = ("encoder-opset17", "encoder-gelu20", "kws-lstm", "kws-gru", "cnn-qdq", "cnn-qop")


def _built(name: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        import onnx

        from leka.optimize import holdout_models as hm

        path = folder / f"{name}.onnx"
        if name.startswith("cnn-"):
            return hm.quantized_cnn(path, "QDQ" if name == "cnn-qdq" else "QOperator")
        model = {"encoder-opset17": lambda: hm.encoder_block(), "encoder-gelu20": lambda: hm.encoder_block(
            opset=20, gelu_op=True), "kws-lstm": lambda: hm.kws_rnn("LSTM"), "kws-gru": lambda: hm.kws_rnn("GRU")}[name]()
        onnx.save(model, str(path))
        return path
    return write


def catalogue() -> tuple[dict[str, Callable[[Path], Path]], list[str]]:
    """({name: writer(folder) -> model path}, notes on what is absent here)."""
    models: dict[str, Callable[[Path], Path]] = {n: _built(n) for n in BUILT}
    notes = []
    import onnx.backend.test

    light = Path(onnx.backend.test.__file__).parent / "data" / "light"
    found = sorted(light.glob("light_*.onnx")) if light.is_dir() else []
    if not found:
        notes.append(f"onnx's light_* test models: absent from this onnx package ({light}); skipped")
    for p in found:
        models[p.stem] = lambda folder, p=p: p
    from leka.optimize import real_models

    for name in real_models.available():
        models[f"tv-{name}"] = lambda folder, name=name: real_models.write(name, folder)
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
        notes.append("torch + torchvision installed: fresh exports are not made here; the tv-* models are the "
                     "project's exports")
    except ImportError:
        notes.append("torch/torchvision not installed: no fresh torchvision exports; the tv-* models are the "
                     "project's stored torch.onnx exports (weights drawn from a fixed seed)")
    return models, notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="minutes=10", help="leka optimize budget per model (default minutes=10)")
    ap.add_argument("--models", help="comma-separated names (default: --set)")
    ap.add_argument("--set", choices=("built", "all"), default="all", help="built: the six onnx.helper models")
    ap.add_argument("--method", default="leka")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--time", type=float, default=2.0, help="seconds per build in the latency comparison")
    ap.add_argument("--db", help="tuning db (default: a fresh one in the output folder, so nothing is reused)")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "results" / f"holdout_models_{time.strftime('%Y-%m-%d')}"))
    ap.add_argument("--list", action="store_true", help="list the models available here and exit")
    args = ap.parse_args()

    models, notes = catalogue()
    for n in notes:
        print(f"note: {n}")
    if args.list:
        print("\n".join(models))
        return 0
    names = args.models.split(",") if args.models else list(BUILT if args.set == "built" else models)
    unknown = [n for n in names if n not in models]
    if unknown:
        print(f"unknown model(s) {', '.join(unknown)}; --list shows the available ones", file=sys.stderr)
        return 2
    out = Path(args.out)
    (out / "models").mkdir(parents=True, exist_ok=True)
    db = args.db or str(out / "tuning.db")
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}; budget {args.budget}", flush=True)
    rows: list[dict] = []
    for n in names:  # results.json after each model: a later one's crash or a stop loses none before it
        rows.append(optimize_one(n, models[n](out / "models"), out, args, db))
        (out / "results.json").write_text(json.dumps({"budget": args.budget, "notes": notes, "rows": rows}, indent=2))
    print(f"load average after: {os.getloadavg()}")
    (out / "results.json").write_text(json.dumps({"budget": args.budget, "notes": notes, "rows": rows}, indent=2))
    table = render(rows, args.budget, notes)
    (out / "results.md").write_text(table)
    print(table)
    print(json.dumps([{k: r.get(k) for k in ("model", "opt/onnxruntime", "default/onnxruntime", "max_err", "error")}
                      for r in rows]))
    return 0


def _ratio(lat: dict, name: str) -> str:
    """A comparison build's time over ONNX Runtime's; '-' when that build failed (the manifest says why)."""
    return f"{lat[name] / lat['onnxruntime']:.2f}" if name in lat else "-"


def render(rows: list[dict], budget: str, notes: list[str]) -> str:
    lines = [f"# leka optimize on held-out models (budget {budget} per model)", "",
             "| model | opt ms | ORT ms | opt/ORT | default/ORT | dlight/ORT | max abs err vs ORT | kernels replaced | "
             "wall min |", "|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    for r in rows:
        if "error" in r:
            what = "built, verified (max abs err " + \
                f"{max((r['max_abs_err'] or {}).values(), default=float('nan')):.2g}), " if r.get("built") else "failed: "
            lines.append(f"| {r['model']} | {what}{r['error'][:200]} |||||||| {r['wall_s'] / 60:.1f} |")
            continue
        lat = r["latency_ms"]
        r["default/onnxruntime"] = lat["tvm-naive"] / lat["onnxruntime"] if "tvm-naive" in lat else None
        r["max_err"] = max((r["max_abs_err"] or {}).values(), default=None)
        ratios.append(r["opt/onnxruntime"])
        lines.append(f"| {r['model']} | {lat['optimized']:.3f} | {lat['onnxruntime']:.3f} | {r['opt/onnxruntime']:.2f} | "
                     f"{_ratio(lat, 'tvm-naive')} | {_ratio(lat, 'tvm-dlight')} | "
                     f"{r['max_err']:.2g} | {r['kernels_replaced']}/{r['kernels']} | {r['wall_s'] / 60:.1f} |")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines += ["", f"{sum(x <= 1.0 for x in ratios)}/{len(rows)} models at opt/ORT <= 1.0; geomean opt/ORT "
                      f"{geo:.2f} over the {len(ratios)} timed; {sum(1 for r in rows if r.get('built') and 'error' in r)} "
                      f"built but not timed; {sum(1 for r in rows if 'error' in r and not r.get('built'))} failed"]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
