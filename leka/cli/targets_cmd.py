"""`leka targets [--json]`: the target presets, whether each runs here, and their hardware facts."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("targets", help="list target presets (runnable here or build-only) and hardware facts",
                       description="List target presets: name, TVM target (dict), runnable on this machine, "
                                   "and the hardware facts used for rooflines, prompts and memory budgets.")
    p.add_argument("--json", action="store_true", help="print a JSON list of presets")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.targets import all_presets

    presets = list(all_presets().values())
    if args.json:
        print(json.dumps([p.to_json() for p in presets], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="LEKA target presets")
    for col in ("name", "family", "runnable", "TVM target", "peak FP32 GFLOP/s", "mem BW GB/s", "notes"):
        t.add_column(col)
    for p in presets:
        tgt = {k: v for k, v in p.target.items() if k != "host"}
        t.add_row(p.name, p.family, "yes" if p.runnable else "no", json.dumps(tgt),
                  str(p.facts.get("peak_fp32_gflops") or "-"), str(p.facts.get("mem_bw_gbs") or "-"),
                  p.description if p.runnable else p.why_not_runnable)
    Console().print(t)
    return 0
