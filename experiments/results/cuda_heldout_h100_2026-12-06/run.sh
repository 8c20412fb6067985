#!/bin/bash
# The held-out CUDA slice (issue 23: the 45 test-split tasks of ../cuda_heldout_h200_2026-12-04/tasks.txt) at one
# code version, on the GPU host, from the project root, one call per half (64 MiB carry limit):
#   run(command="bash experiments/results/cuda_heldout_h100_2026-12-06/run.sh SET", carry=[".gpu-bundle", ".leka/gpu23/SET"])
# SET: t20 (../cuda_rules_h100_2026-12-05/test_tasks.txt) or rest (the other 25). Job folders made here by
#   .venv/bin/python experiments/cuda_slice.py prepare --tasks @LIST --out .leka/gpu23/SET --k 6 --trials 2 --task-timeout 240
S=${1:?usage: run.sh t20|rest}; J=.leka/gpu23/$S
[ -d "$J" ] || { echo "no $J (carry it)"; exit 2; }
python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,clocks.current.memory --format=csv > "$OUT/gpu_$S.txt"
T0=$(date +%s); timeout 540 python3 -m leka.remote.multi --jobs 16 "$J"/*/ > "$OUT/multi_$S.log" 2>&1
echo "rc=$? wall=$(( $(date +%s) - T0 ))s" >> "$OUT/multi_$S.log"
(cd "$J" && tar czf "$OUT/results_$S.tgz" */result.json */check.json)
tail -3 "$OUT/multi_$S.log"; cat "$OUT/gpu_$S.txt"
