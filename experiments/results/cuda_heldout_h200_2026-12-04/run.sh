# Held-out CUDA slice (issue 23), run from the repository root on the device machine.
D=$PWD/.leka/wt23gpu; W=/tmp/w; mkdir -p $W
echo "repo: $PWD $(git log --oneline -1 2>/dev/null | cut -c1-60)"
for f in bundle src jobs_all; do tar xzf $D/$f.tgz -C $W || exit 9; done
cd $W && python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$W/.gpu-bundle:$W/.gpu-bundle/site:$W GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,clocks.current.memory --format=csv > $OUT/gpu.txt
python3 -c "import leka.remote.multi as m; print(m.__file__, m.CUBIN_CACHE)"
S=$(date +%s); python3 -m leka.remote.multi --jobs 16 jobs/*/ > $OUT/multi_all.log 2>&1
echo rc=$? wall=$(( $(date +%s) - S ))s >> $OUT/multi_all.log
tar czf $OUT/results_all.tgz jobs/*/result.json jobs/*/check.json
tail -3 $OUT/multi_all.log; cat $OUT/gpu.txt
