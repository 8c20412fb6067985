cd /work/main
set -x
date
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_densenet121,light_vgg19,light_resnet50,light_inception_v2,tv-mobilenet_v2-dynamo-op18 --jobs 1 --out /work/out/r5_80bf522 --db /work/out/r5_80bf522.db
date
echo ALLDONE
