cd /work/main
cp /work/out/r10_bfa4b43.db /work/out/r10_repro.db
.venv/bin/leka optimize .venv/lib/python3.11/site-packages/onnx/backend/test/data/light/light_inception_v2.onnx -o /work/out/r10_repro/inc2.leka --budget minutes=10 --db /work/out/r10_repro.db --time-s 2.0 --quiet
