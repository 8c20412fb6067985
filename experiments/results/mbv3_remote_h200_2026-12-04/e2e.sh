D=$PWD/.leka/wt23gpu; W=/tmp/w; mkdir -p $W
for f in bundle src arts; do tar xzf $D/$f.tgz -C $W || exit 9; done
cd $W && python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$W/.gpu-bundle:$W/.gpu-bundle/site:$W GPU_ARCH=sm_90 PYTHONUNBUFFERED=1 GPU_CUBIN_CACHE=/tmp/cub
python3 $D/e2e.py mbv3.leka mbv3-dlight.leka 2>&1 | tee $OUT/e2e.log
python3 -m leka.cli.main run mbv3.leka --check --time 300 2>&1 | tail -3 | tee -a $OUT/e2e.log
