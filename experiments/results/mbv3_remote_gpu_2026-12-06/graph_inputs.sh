python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$PWD/.gpu-bundle:$PWD/.gpu-bundle/site:$PWD GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
python3 experiments/results/mbv3_remote_gpu_2026-12-06/graph_inputs.py "$@" 2>&1 | tee "$OUT/graph_inputs.log"
