"""What one rule's winners are worth in the built model: the winners a `leka optimize` run left in its tuning db,
built twice, as they are and with every kernel won by RULE swapped for the first candidate of the first other rule
that claims it (what the quick pass judged before RULE existed), timed side by side with ONNX Runtime in the same
alternating rounds (leka.optimize.e2e_timing.alternate, 2 threads each), outputs compared.

  python experiments/rule_swap_ab.py MODEL --db TUNING_DB [--rule cpu.pointwise_dot] [--time-s 2]

MODEL is a catalogue name of experiments/holdout_models.py or an .onnx path; the db is the one the run wrote
(`--db` of `leka optimize` / holdout_models.py). Kernels without a db winner keep the default build in both.
The db's sources are built in this process without the evaluator's checks `leka optimize` applies to db entries
(pipeline._reverify): give it only a db your own run wrote.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

from holdout_models import catalogue  # noqa: E402


def rule_candidates(spec: Any, preset: Any) -> list[tuple[str, list[str]]]:
    """(rule name, its candidates' TVMScript) of every CPU rule claiming the kernel, in rule order."""
    from leka.ir import CandidateIR
    from leka.optimize.extract import make_task
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import CPU_RULES

    task = make_task(spec, preset)
    ctx = RuleContext.build(task, CandidateIR.initial(task), preset, [])
    return [(r.NAME, [ir.to_tvmscript("host-cpu") for ir in irs]) for r in CPU_RULES if (irs := r.apply(ctx) or [])]


def swap_for(w: Any, spec: Any, preset: Any, rule: str) -> tuple[str, str] | None:
    """(rule, TVMScript) to build instead of the winner when RULE made it (the quick pass records its rule; a
    search's winner is RULE's when its text is one of RULE's candidates): the first other rule's first candidate."""
    claims = rule_candidates(spec, preset)
    mine = next((srcs for name, srcs in claims if name == rule), [])
    if w.detail.get("rule") != rule and w.source not in mine:
        return None
    return next(((name, srcs[0]) for name, srcs in claims if name != rule), None)


def winner_sets(model: Path, db_path: str, rule: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """({kernel: source} as tuned, the same with RULE's winners swapped, lines saying what was swapped)."""
    from leka.optimize.db import TuningDB, target_key
    from leka.optimize.extract import kernel_specs
    from leka.optimize.importer import import_model
    from leka.targets import get_target

    preset = get_target("host-cpu")
    _loaded, fused = import_model(model)
    tuned: dict[str, str] = {}
    swapped: dict[str, str] = {}
    said = []
    with TuningDB(db_path) as db:
        for spec in kernel_specs(fused):
            w = db.get(spec.key, target_key(preset))
            if w is None or w.source is None:
                continue
            alt = swap_for(w, spec, preset, rule)
            for name in spec.names:
                tuned[name] = w.source
                swapped[name] = alt[1] if alt else w.source
            if alt:
                said.append(f"{spec.name} (x{spec.weight}): {rule} -> {alt[0]}'s first candidate")
    return tuned, swapped, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--db", required=True)
    ap.add_argument("--rule", default="cpu.pointwise_dot")
    ap.add_argument("--time-s", type=float, default=2.0)
    args = ap.parse_args()
    from leka.optimize import build_job, e2e_timing
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import prepack_weights
    from leka.targets import get_target

    with tempfile.TemporaryDirectory() as tmp:
        models, _ = catalogue()
        path = models[args.model](Path(tmp)) if args.model in models else Path(args.model)
        tuned, swapped, said = winner_sets(path, args.db, args.rule)
        print(f"{args.model}: {len(tuned)} kernel calls replaced; swapped {len(said)} kernel(s)")
        for line in said:
            print("  " + line)
        if not said:
            return 0
        loaded, fused = import_model(path)
        preset = get_target("host-cpu")
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal([int(d) for d in i.shape]).astype(i.dtype) for i in loaded.inputs]
        runners = {name: build_job._vm_runner(build_job.compile_model(prepack_weights(
            build_job.with_winners(fused, rep)), preset)) for name, rep in (("with", tuned), ("swapped", swapped))}
        outs = {k: r(inputs) for k, r in runners.items()}
        diff = max(float(np.abs(a - b).max()) for a, b in zip(outs["with"], outs["swapped"]))
        runners["onnxruntime"] = build_job._ort_runner(str(path), [i.name for i in loaded.inputs],
                                                       int(os.environ["TVM_NUM_THREADS"]))
        lat, _host = e2e_timing.alternate(runners, inputs, min_time_s=args.time_s)
        ms = {k: v["median_ms"] for k, v in lat.items()}
        print(f"  with {args.rule} {ms['with']:.4f} ms, swapped {ms['swapped']:.4f} ms "
              f"(with/swapped {ms['with'] / ms['swapped']:.3f}), ONNX Runtime {ms['onnxruntime']:.4f} ms; "
              f"opt/ORT {ms['swapped'] / ms['onnxruntime']:.2f} -> {ms['with'] / ms['onnxruntime']:.2f}; "
              f"spread across rounds {({k: round(v['range_rel'], 3) for k, v in lat.items()})}; "
              f"outputs differ by {diff:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
