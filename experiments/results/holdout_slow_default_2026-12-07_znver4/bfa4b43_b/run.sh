cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_densenet121,tv-inception_v3-dynamo-op18 --jobs 1 --out /work/out/r11_bfa4b43 --db /work/out/r11_bfa4b43.db
date
echo ALLDONE
