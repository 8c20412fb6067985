"""Speech / signal / NLP / robotics / anomaly workloads: metadata, non-degeneracy on every workload
(NumPy only), and TVM validation of a representative subset against the NumPy references."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import benchmark
from leka.tasks import validate_task_metadata
from leka.tasks.nondegenerate import check_nondegenerate

PREFIXES = ("nlp_", "speech_", "signal_", "robotics_", "anomaly_")
MODULES = sorted(m.name for m in pkgutil.iter_modules(benchmark.__path__) if m.name.startswith(PREFIXES))
TASKS = [t for m in MODULES for t in importlib.import_module(f"benchmark.{m}").tasks()]
BY_ID = {t.id: t for t in TASKS}
# one per family: int8 requant GEMM, fp16 attention, TVMScript scan, DFT table, gather, multi-output, popcount
SUBSET = (
    "l1-linear-128x512x128-i8",
    "l2-attention_head-4x128x32-f16",
    "l1-biquad_cascade_df2t-2x1024s2",
    "l2-stft_power-25x512",
    "l1-embedding_gather-64x8000x256",
    "l2-lstm_cell_step-40x128",
    "l1-hamming_distance_matrix-500x500x32-u8",
    "l1-pcen-40x49",
    "l2-kalman_scalar_update-15",
    "l1-fir-256x32-i16",
)


def test_ids_unique_and_metadata_valid():
    assert len(BY_ID) == len(TASKS)
    for t in TASKS:
        validate_task_metadata(t)
        assert t.flops >= 0 and t.bytes > 0 and t.description


def test_catalogue_size():
    by_domain: dict[str, set[str]] = {}
    for t in TASKS:
        by_domain.setdefault(t.domain, set()).add(t.pattern)
    assert sum(len(p) for p in by_domain.values()) >= 150
    assert {t.dtype for t in TASKS} >= {"float32", "float16", "int8"}
    assert {t.level for t in TASKS} == {1, 2}


@pytest.mark.parametrize("task_id", sorted(BY_ID))
def test_nondegenerate(task_id):
    assert check_nondegenerate(BY_ID[task_id]) == []


@pytest.mark.parametrize("task_id", SUBSET)
def test_tvm_matches_reference(task_id):
    import tvm

    t = BY_ID[task_id]
    f = t.build()
    assert [p.name for p in f.params] == [a.name for a in t.args]
    ex = tvm.compile(f, target="llvm")
    dev = tvm.cpu()
    rtol, atol = t.tolerance()
    for seed, dist in ((0, "normal"), (1, "heavy")):
        ins = t.generate_inputs(np.random.default_rng(seed), dist)
        outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in t.outputs]
        ex["main"](*[tvm.runtime.tensor(a, dev) for a in ins], *outs)
        for got, ref in zip(outs, t.run_reference(ins), strict=True):
            scale = float(np.abs(ref.astype(np.float64)).max())
            np.testing.assert_allclose(
                got.numpy().astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol * scale
            )
