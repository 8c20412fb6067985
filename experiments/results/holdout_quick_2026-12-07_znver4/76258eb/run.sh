cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_densenet121,light_inception_v2 --jobs 1 --out /work/out/r7_76258eb --db /work/out/r7_76258eb.db
date
echo ALLDONE
