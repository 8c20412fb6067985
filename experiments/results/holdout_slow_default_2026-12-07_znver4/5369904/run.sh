cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_vgg19 --jobs 1 --out /work/out/r9_5369904 --db /work/out/r9_5369904.db
date
echo ALLDONE
