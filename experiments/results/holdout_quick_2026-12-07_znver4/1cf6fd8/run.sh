cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_densenet121,light_inception_v2,light_vgg19 --jobs 1 --out /work/out/r8_1cf6fd8 --db /work/out/r8_1cf6fd8.db
date
echo ALLDONE
