"""Every variant of gpu.tensor_core_matmul beside tvm-naive and tvm-dlight, on the fp16 tasks the rule takes,
as job folders for a GPU host (built here; correctness and timing there, docs/cuda.md):

    .venv/bin/python experiments/tensor_core_check.py prepare --out .leka/tc-check   # here
    # GPU host, with the runtime bundle (docs/cuda.md): python3 -m leka.remote.multi --jobs 5 .leka/tc-check/*/
    .venv/bin/python experiments/cuda_slice.py report --jobs .leka/tc-check        # here: vs dlight, Fast@1.0

The job folders have cuda_slice.py's layout (job.json, prepare.json, <module>.so/.tvmscript), so its report
reads them. Result of 2026-12-01 on the H200: experiments/results/tensor_core_h200_2026-12-01/.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def tensor_core_tasks() -> list:
    """fp16 tasks of the suite the rule proposes for on the cuda preset."""
    from leka.ir import CandidateIR
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import gpu_tensor_core_matmul as rule
    from leka.targets import get_target
    from leka.tasks import all_tasks

    cuda = get_target("cuda")
    return [t for t in all_tasks() if t.dtype == "float16"
            and rule.apply(RuleContext.build(t, CandidateIR.initial(t), cuda, []))]


def prepare(out: Path, arch: str, trials: int) -> None:
    from leka.compiler import build, default_schedule
    from leka.ir import CandidateIR
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import gpu_tensor_core_matmul as rule
    from leka.remote.job import make_multi_job, parse_candidate
    from leka.targets import get_target

    cuda = get_target({**get_target("cuda").target, "arch": arch})
    for task in tensor_core_tasks():
        mods = [("tvm-naive", default_schedule(task.build(), cuda, "naive"), {"method": "tvm-naive"})]
        dlight = default_schedule(task.build(), cuda, "dlight")
        if dlight is not None:
            mods.append(("tvm-dlight", dlight, {"method": "tvm-dlight"}))
        for n, ir in enumerate(rule.apply(RuleContext.build(task, CandidateIR.initial(task), cuda, [])) or []):
            mods.append((f"leka-{n}", parse_candidate(ir.to_tvmscript(cuda)),
                         {"method": "leka-offline", "rule": rule.NAME, "knobs": ir.notes["knobs"]}))
        d = out / task.id
        make_multi_job(task, [(name, build(mod, cuda), meta) for name, mod, meta in mods], cuda, d, trials=trials)
        for name, mod, _ in mods:
            (d / f"{name}.tvmscript").write_text(mod.script())
        row = {"task": task.id, "domain": task.domain, "level": task.level, "dtype": task.dtype,
               "modules": [name for name, _, _ in mods], "failed": []}
        (d / "prepare.json").write_text(json.dumps(row, indent=1))
        print(json.dumps({k: row[k] for k in ("task", "modules")}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=str(ROOT / ".leka" / "tc-check"))
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--trials", type=int, default=2)
    args = ap.parse_args()
    prepare(Path(args.out), args.arch, args.trials)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
