cd /work/main
while ! grep -q ALLDONE /work/out/r5_80bf522/run.log; do sleep 5; done
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_vgg19 --jobs 1 --out /work/out/r6_vgg_9c18074 --db /work/out/r6_vgg_9c18074.db
date
echo ALLDONE
