"""Re-time `leka optimize` artifacts against ONNX Runtime with the build job's end-to-end comparison
(leka/optimize/e2e_timing.alternate: alternating rounds, one thread count, each batch after the last build's
threads have stopped running), ONNX Runtime twice in the same rounds: spinning between its parallel sections
(its default, as users run it and as the comparison times it since eeb2029) and with spinning turned off (as
the comparison timed it before). Each artifact runs through TVM's runtime alone (LoadedArtifact: digests
checked before the library loads) on seeded random inputs, and its outputs are checked against ONNX Runtime's.

The builds are not re-tuned: this measures the same artifacts under the two ways of timing ONNX Runtime.

Usage: python experiments/retime_artifacts.py ART.leka=MODEL.onnx [...] [--threads 2] [--time 2] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np


def retime(artifact: str, model: str, threads: int, time_s: float) -> dict[str, Any]:
    from leka.optimize.build_job import _ort_runner
    from leka.optimize.e2e_timing import alternate
    from leka.optimize.runtime import LoadedArtifact
    from leka.optimize.timing_verdict import verdict

    art = LoadedArtifact(artifact)
    rng = np.random.default_rng(0)
    arrays = {s["name"]: rng.standard_normal(s["shape"]).astype(s["dtype"]) for s in art.manifest["inputs"]}
    inputs, names = art.inputs(arrays), [s["name"] for s in art.manifest["inputs"]]
    runners = {"optimized": lambda x: art._call(x),
               "onnxruntime": _ort_runner(model, names, threads),
               "onnxruntime-nospin": _ort_runner(model, names, threads, spin=False)}
    err = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
              for a, b in zip(runners["optimized"](inputs), runners["onnxruntime"](inputs)))
    lat, host = alternate(runners, inputs, min_time_s=time_s)
    opt = lat["optimized"]
    row: dict[str, Any] = {"artifact": artifact, "model": model, "max_abs_err": err, "host": host,
                           "ms": {k: v["median_ms"] for k, v in lat.items()},
                           "min_ms": {k: v["min_ms"] for k, v in lat.items()},
                           "range_rel": {k: v["range_rel"] for k, v in lat.items()}}
    for ref in ("onnxruntime", "onnxruntime-nospin"):
        row[f"opt/{ref}"] = opt["median_ms"] / lat[ref]["median_ms"]
        row[f"verdict vs {ref}"] = verdict(opt, lat[ref])
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| artifact | opt ms | ORT ms (spinning) | ORT ms (spin off) | opt/ORT | opt/ORT (spin off) | "
            "verdict vs ORT | spread opt / ORT | max abs err |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        ms, rr = r["ms"], r["range_rel"]
        lines.append(f"| {Path(r['artifact']).name} | {ms['optimized']:.4g} | {ms['onnxruntime']:.4g} | "
                     f"{ms['onnxruntime-nospin']:.4g} | {r['opt/onnxruntime']:.2f} | "
                     f"{r['opt/onnxruntime-nospin']:.2f} | {r['verdict vs onnxruntime']} | "
                     f"{rr['optimized']:.0%} / {rr['onnxruntime']:.0%} | {r['max_abs_err']:.2g} |")
    ratios = [r["opt/onnxruntime"] for r in rows]
    old = [r["opt/onnxruntime-nospin"] for r in rows]
    if ratios:
        lines.append(f"\n{sum(x <= 1.0 for x in ratios)}/{len(ratios)} at opt/ORT <= 1.0, geomean "
                     f"{float(np.exp(np.mean(np.log(ratios)))):.2f} (ORT spinning); with ORT's spinning off: "
                     f"{sum(x <= 1.0 for x in old)}/{len(old)}, geomean {float(np.exp(np.mean(np.log(old)))):.2f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", metavar="ART.leka=MODEL.onnx")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--time", type=float, default=2.0, help="seconds of timing per build (min_time_s)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    from leka.optimize.build_job import TVM_SPIN_COUNT

    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", TVM_SPIN_COUNT)  # as the build job times it
    rows = []
    for pair in args.pairs:
        artifact, sep, model = pair.partition("=")
        if not sep or not Path(artifact).is_dir() or not Path(model).is_file():
            print(f"error: {pair!r} is not ART.leka=MODEL.onnx (an artifact folder and an ONNX file)", file=sys.stderr)
            return 2
        rows.append(retime(artifact, model, args.threads, args.time))
        print(f"{Path(artifact).name}: opt/ORT {rows[-1]['opt/onnxruntime']:.2f} "
              f"(spin off: {rows[-1]['opt/onnxruntime-nospin']:.2f})", flush=True)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
