cd /work/main
set -x
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models tv-googlenet-dynamo-op20,tv-mobilenet_v3_small-dynamo-op21,tv-shufflenet_v2_x0_5-dynamo-op18,tv-regnet_x_400mf-torchscript-op13,tv-squeezenet1_0-torchscript-op9,tv-inception_v3-dynamo-op18 --jobs 1 --out /work/out/r6_tv_7423171 --db /work/out/r6_tv_7423171.db
echo ALLDONE
