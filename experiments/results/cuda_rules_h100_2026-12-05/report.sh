#!/bin/bash
# Back here, from the worktree root, after the two device calls of run.sh (dev, test):
#   bash experiments/results/cuda_rules_h100_2026-12-05/report.sh DEV_FILES_AT TEST_FILES_AT
# (each the files_at folder of its call, holding results_SPLIT.tgz, multi_SPLIT.log, gpu_SPLIT.txt).
# Unpacks the results into .leka/gpu23/SPLIT/{before,after}, copies the logs here, reports each set
# (experiments/cuda_slice_report.py: best proposal and what ships, vs dlight) and after against before.
R=experiments/results/cuda_rules_h100_2026-12-05
PY=${PY:-/work/main/.venv/bin/python}
export PYTHONPATH=$PWD
set -e
for pair in "dev:${1:?DEV_FILES_AT}" "test:${2:?TEST_FILES_AT}"; do
    S=${pair%%:*}; F=${pair#*:}
    tar xzf "$F/results_$S.tgz" -C ".leka/gpu23/$S"
    cp "$F/multi_$S.log" "$F/gpu_$S.txt" "$R/"
    $PY experiments/cuda_slice.py report --jobs ".leka/gpu23/$S/before" --out "$R/${S}_before_rows.jsonl" \
        > "$R/${S}_before_report.txt"
    $PY experiments/cuda_slice.py report --jobs ".leka/gpu23/$S/after" --before "$R/${S}_before_rows.jsonl" \
        --out "$R/${S}_after_rows.jsonl" > "$R/${S}_after_report.txt"
    tail -25 "$R/${S}_after_report.txt"
done
