cd /work/main
set -x
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models encoder-opset17,encoder-gelu20,kws-lstm,kws-gru,cnn-qdq,cnn-qop --jobs 1 --out /work/out/r14_built_df32411 --db /work/out/r14_built_df32411.db
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models tv-mobilenet_v2-dynamo-op18,tv-resnet18-dynamo-op18,tv-squeezenet1_1-dynamo-op18 --jobs 1 --out /work/out/r14_tv_df32411 --db /work/out/r14_tv_df32411.db
.venv/bin/python experiments/holdout_models.py --budget minutes=10 --models light_squeezenet,light_shufflenet,light_bvlc_alexnet,light_inception_v1,light_zfnet512 --jobs 1 --out /work/out/r14_light_df32411 --db /work/out/r14_light_df32411.db
echo ALLDONE
