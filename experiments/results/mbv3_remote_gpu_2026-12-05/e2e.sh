#!/bin/bash
# On the GPU host, from the project root, carry .gpu-bundle and .leka/e2e23/{mbv3,mbv3-dlight}.leka:
#   run(command="bash experiments/results/mbv3_remote_gpu_2026-12-05/e2e.sh", carry=[...])
python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu_e2e.txt"
python3 experiments/results/mbv3_remote_gpu_2026-12-05/e2e.py .leka/e2e23/mbv3.leka .leka/e2e23/mbv3-dlight.leka \
    2>&1 | tee "$OUT/e2e.log"
python3 -m leka.cli.main run .leka/e2e23/mbv3.leka --check --time-runs 300 2>&1 | tail -3 | tee -a "$OUT/e2e.log"
