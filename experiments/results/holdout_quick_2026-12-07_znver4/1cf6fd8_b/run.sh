cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_resnet50,tv-inception_v3-dynamo-op18 --jobs 1 --out /work/out/r9_1cf6fd8 --db /work/out/r9_1cf6fd8.db
date
echo ALLDONE
