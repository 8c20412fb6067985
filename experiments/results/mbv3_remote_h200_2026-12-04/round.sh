# One remote round of `leka optimize --remote` (issue 23): bash round.sh N  (round-N.tgz carried beside it)
D=$PWD/.leka/wt23gpu; W=/tmp/w; N=$1; mkdir -p $W
for f in bundle src round$N; do tar xzf $D/$f.tgz -C $W || exit 9; done
cd $W && python3 -m pip install -q --no-index --no-deps --target .gpu-bundle/site .gpu-bundle/whl/*.whl || exit 8
export PYTHONPATH=$W/.gpu-bundle:$W/.gpu-bundle/site:$W GPU_ARCH=sm_90 PYTHONUNBUFFERED=1
python3 -m leka.remote.multi --jobs 16 round-$N/*/ > $OUT/multi_round$N.log 2>&1; echo rc=$? >> $OUT/multi_round$N.log
ls -d round-$N/*/ | split -n r/4 - /tmp/part_
for p in /tmp/part_*; do tar czf $OUT/res$N-$(basename $p).tgz $(sed 's|$|*.json|' $p) $(sed 's|$|out_*.npz|' $p) 2>/dev/null; done
ls -la $OUT; tail -2 $OUT/multi_round$N.log
