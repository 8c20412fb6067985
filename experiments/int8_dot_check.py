"""cpu.int8_dot against the other CPU rules on int8 GEMM-like tasks, through the evaluator (speedup vs
tvm-naive). Every candidate of every applicable CPU rule is evaluated once (the search); then the best
candidate without cpu.int8_dot ("before") and the best cpu.int8_dot candidate ("after") are evaluated
again alternately, `--rounds` times each, and the medians reported. Dev figures when run on the tasks the
rule was written against.

    .venv/bin/python experiments/int8_dot_check.py [--rounds 3] [TASK ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from leka.evaluator import EvalConfig, Evaluator  # noqa: E402
from leka.ir import CandidateIR  # noqa: E402
from leka.proposers.offline.context import RuleContext  # noqa: E402
from leka.proposers.offline.rules import CPU_RULES  # noqa: E402
from leka.targets import get_target  # noqa: E402
from leka.tasks import get_task  # noqa: E402

TASKS = ["l1-linear-128x512x128-i8", "l1-linear-128x128x512-i8", "l2-linear_relu-64x512x128-i8",
         "l1-conv2d_1x1_nhwc_i8acc-48x48x8x16-i8", "l1-conv2d_1x1_nhwc_i8acc-6x6x128x128-i8",
         "l2-conv2d_1x1_i8_requant_nhwc-28x28x192x32-i8", "l2-conv2d_1x1_i8_requant_nhwc-7x7x576x96-i8",
         "l2-conv2d_1x1_i8_requant_lut_nhwc-14x14x40x240-i8"]


def candidates(task) -> list[tuple[str, CandidateIR]]:
    """Every candidate of every CPU rule that validates (memory budget), as the offline proposer filters."""
    preset = get_target("host-cpu")
    ctx = RuleContext.build(task, CandidateIR.initial(task), preset, [])
    out = []
    for rule in CPU_RULES:
        for ir in rule.apply(ctx) or []:
            if ir.validate(preset):
                continue
            out.append((f"{rule.NAME} {json.dumps(ir.notes.get('knobs', {}), sort_keys=True)}", ir))
    return out


def best(ev, task, cands) -> dict:
    """The fastest correct candidate of one evaluation each: {name, source, speedup} (None when none)."""
    top = {}
    for name, ir in cands:
        src = ir.to_tvmscript(ev.target)
        r = ev.evaluate(task, src, baseline="tvm-naive").to_json()
        ok = r["correct"] and r["speedup"]
        print(f"  {name:60s} {'%.2fx' % r['speedup'] if ok else r['failure'] or r['error']}", flush=True)
        if ok and r["speedup"] > top.get("speedup", 0):
            top = {"name": name, "source": src, "speedup": r["speedup"]}
    return top


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="*", default=TASKS)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with Evaluator("host-cpu", EvalConfig()) as ev:
        for tid in args.tasks:
            task = get_task(tid)
            cands = candidates(task)
            print(tid, flush=True)
            before = best(ev, task, [c for c in cands if not c[0].startswith("cpu.int8_dot")])
            after = best(ev, task, [c for c in cands if c[0].startswith("cpu.int8_dot")])
            fresh = {"before": [], "after": []}
            for _ in range(args.rounds):  # interleaved fresh evaluations of the two winners
                for side, b in (("before", before), ("after", after)):
                    if b:
                        r = ev.evaluate(task, b["source"], baseline="tvm-naive", holdout=True).to_json()
                        fresh[side].append(r["speedup"] if r["correct"] else 0.0)
            row = {"task": tid, **{f"{s}_rule": b.get("name") for s, b in (("before", before), ("after", after))},
                   **{s: round(statistics.median(v), 2) if v else None for s, v in fresh.items()},
                   **{f"{s}_runs": [round(x, 2) for x in v] for s, v in fresh.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
