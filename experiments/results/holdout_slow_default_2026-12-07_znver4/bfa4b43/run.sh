cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_vgg19,light_inception_v2 --jobs 1 --out /work/out/r10_bfa4b43 --db /work/out/r10_bfa4b43.db
date
echo ALLDONE
