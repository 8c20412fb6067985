cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_resnet50,light_inception_v2,light_densenet121,light_vgg19,tv-inception_v3-dynamo-op18 --jobs 1 --out /work/out/r4_light_d3e1888 --db /work/out/r4_light_d3e1888.db
date
echo ALLDONE
