#!/bin/bash
# One remote round of `leka optimize --target cuda --remote` for MobileNetV3-small (issue 23), on the GPU host
# from the project root, the runtime bundle and the round's jobs carried:
#   run(command="bash experiments/results/mbv3_remote_gpu_2026-12-05/round.sh N",
#       carry=[".gpu-bundle", ".leka/e2e23/jobs/round-N"])
# Back here: tar xzf FILES_AT/res-*.tgz -C .leka/e2e23/jobs/round-N, then `leka remote ingest`.
N=${1:?usage: round.sh N}; J=.leka/e2e23/jobs/round-$N
[ -d "$J" ] || { echo "no $J (carry it)"; exit 2; }
python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu_round$N.txt"
python3 -m leka.remote.multi --jobs 16 "$J"/*/ > "$OUT/multi_round$N.log" 2>&1; echo "rc=$?" >> "$OUT/multi_round$N.log"
cd "$J" && ls -d */ | split -n r/4 - /tmp/part_
for p in /tmp/part_*; do
    tar czf "$OUT/res-$(basename "$p").tgz" $(sed 's|$|*.json|' "$p") $(sed 's|$|out_*.npz|' "$p") 2>/dev/null
done
ls -la "$OUT"; tail -2 "$OUT/multi_round$N.log"; cat "$OUT/gpu_round$N.txt"
