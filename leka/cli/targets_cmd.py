"""`leka targets [--json]`: the target presets, whether each runs here, and their hardware facts."""
from __future__ import annotations

import json

from .tables import Col, add_output_flags, output_mode, render


def register(sub) -> None:
    p = sub.add_parser("targets", help="list target presets (runnable here or build-only) and hardware facts",
                       description="List target presets: name, TVM target (dict), runnable on this machine, "
                                   "and the hardware facts used for rooflines, prompts and memory budgets.")
    p.add_argument("--json", action="store_true", help="print a JSON list of presets")
    add_output_flags(p, wide="every column: also the notes (why a target cannot run here) and the TVM target "
                             "(wider than 80 columns)")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.targets import all_presets

    presets = list(all_presets().values())
    if args.json:
        print(json.dumps([p.to_json() for p in presets], indent=2))
        return 0
    cols = [Col("name", "id"), Col("family", "id"), Col("runnable", "id"), Col("GFLOP/s", "num"),
            Col("GB/s", "num")]
    if args.wide:
        cols += [Col("notes", "text", want=24), Col("TVM target", "desc", optional=True)]
    rows = []
    for p in presets:
        tgt = {k: v for k, v in p.target.items() if k != "host"}
        row = [p.name, p.family, "yes" if p.runnable else "no", str(p.facts.get("peak_fp32_gflops") or "-"),
               str(p.facts.get("mem_bw_gbs") or "-")]
        rows.append(row + ([p.description if p.runnable else p.why_not_runnable, json.dumps(tgt)] if args.wide
                           else []))
    render("LEKA target presets (peak FP32 GFLOP/s, memory GB/s)", cols, rows, output_mode(args),
           caption=None if args.wide else "--wide: also why a target cannot run here, and its TVM target")
    return 0
