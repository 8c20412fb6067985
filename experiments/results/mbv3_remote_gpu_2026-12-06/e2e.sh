#!/bin/bash
# On the GPU host, from the project root, carry .gpu-bundle and the artifacts named below:
#   run(command="bash experiments/results/mbv3_remote_gpu_2026-12-06/e2e.sh A.leka B.leka ...", carry=[...])
python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu_e2e.txt"
python3 experiments/results/mbv3_remote_gpu_2026-12-06/e2e.py "$@" 2>&1 | tee "$OUT/e2e.log"
for a in "$@"; do python3 -m leka.cli.main run "$a" --check --time-runs 300 2>&1 | tail -2 | tee -a "$OUT/e2e.log"; done
