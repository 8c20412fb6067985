#!/bin/bash
# GPU rules of issue 23 item 2, before (main at 7160775) and after (branch h23), on the GPU host (the call of 2026-12-05 got an H100 80GB HBM3).
# From the worktree root on the device machine, one call per split (carry .gpu-bundle and .leka/gpu23):
#   bash experiments/results/cuda_rules_h100_2026-12-05/run.sh dev     (then: ... run.sh test)
# Job folders made here: experiments/cuda_slice.py prepare --tasks @{dev,test}_tasks.txt --k 6 --trials 2
# --task-timeout 240 into .leka/gpu23/SPLIT/{before,after} (before: run from a worktree of main). Before and after jobs of a task run one after the other (timing is
# one job at a time), so clock drift falls on both alike. Results: $OUT/results_SPLIT.tgz (result.json and
# check.json of every job, paths before/TASK/..., after/TASK/...), the log, the GPU's clocks.
S=${1:?usage: run.sh dev|test}
J=.leka/gpu23/$S
[ -d "$J/before" ] && [ -d "$J/after" ] || { echo "no job folders under $J (carry .leka/gpu23)"; exit 2; }
# after/TASK/trial_K.npz equal to before/TASK's (same task, same seeds) were removed here to fit the carry
# limit (64 MiB with the bundle): copied back from before/ first
for d in "$J"/after/*/; do
    for f in "$J/before/$(basename "$d")"/trial_*.npz; do [ -f "$d/$(basename "$f")" ] || cp "$f" "$d/"; done
done
echo "repo: $PWD $(git log --oneline -1 2>/dev/null | cut -c1-60)"
python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,clocks.current.memory \
    --format=csv > "$OUT/gpu_$S.txt"
DIRS=()
for d in "$J"/before/*/; do
    t=$(basename "$d")
    [ -f "$d/job.json" ] && DIRS+=("$d")
    [ -f "$J/after/$t/job.json" ] && DIRS+=("$J/after/$t/")
done
echo "jobs: ${#DIRS[@]}"
T0=$(date +%s)
timeout 540 python3 -m leka.remote.multi --jobs 16 "${DIRS[@]}" > "$OUT/multi_$S.log" 2>&1
echo "rc=$? wall=$(( $(date +%s) - T0 ))s" >> "$OUT/multi_$S.log"
(cd "$J" && tar czf "$OUT/results_$S.tgz" $(ls -d before/*/result.json before/*/check.json \
    after/*/result.json after/*/check.json 2>/dev/null))
tail -3 "$OUT/multi_$S.log"; cat "$OUT/gpu_$S.txt"
