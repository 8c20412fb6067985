"""Prepare CUDA job folders for the example CUDA candidates (all three example tasks), to run on a GPU box.

    .venv/bin/python experiments/cuda_device_check.py [--out .leka/cuda-jobs] [--arch sm_90]
    leka gpu-bundle -o .gpu-bundle        # runtime-only TVM for the GPU box (once)

then on the GPU machine (Python 3.12 + nvcc, no TVM), from the project root:

    python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl
    PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD python3 -m leka.remote.run_job .leka/cuda-jobs/*

Each task gets a job against the naive baseline (DefaultGPUSchedule / one thread per output) and one
against TVM's dlight GPU rules. run_job prints one JSON line per job (correct?, ms, speedup).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLES = {"ex-matmul-256": "matmul.py", "ex-dwconv3x3-kws": "dwconv3x3.py", "ex-softmax-512x384": "softmax.py"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / ".leka" / "cuda-jobs"))
    ap.add_argument("--arch", default="sm_90", help="GPU arch of the machine that will run the jobs")
    ap.add_argument("--trials", type=int, default=2)
    args = ap.parse_args()

    from leka.remote import make_job
    from leka.targets import get_target
    from benchmark.examples import tasks

    base = get_target("cuda")
    target = dict(base.target, arch=args.arch)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    for task_id, fname in EXAMPLES.items():
        source = (ROOT / "examples" / "cuda" / fname).read_text()
        task = {t.id: t for t in tasks()}[task_id]
        for baseline, trials in (("tvm-naive", args.trials), ("tvm-dlight", 1)):
            job = make_job(task, source, target, out / f"{task_id}--{baseline}", trials=trials, baseline=baseline,
                           number=100, rounds=5)
            size = sum(f.stat().st_size for f in job.iterdir())
            print(f"{job}  ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
