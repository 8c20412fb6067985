"""Regenerate the example candidates under examples/{host-cpu,opencl-pocl,cuda}/ from their schedules.

    .venv/bin/python examples/make_examples.py            # write all, then check each builds
    .venv/bin/python examples/make_examples.py --check    # also run host-cpu/opencl ones vs NumPy and naive

Each candidate is the flat TVMScript of the scheduled task definition (`sch.mod["main"].script()`),
headed by `# leka: task=ID target=PRESET`. Schedules are plain s_tir.Schedule primitives.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tvm import s_tir  # noqa: E402

from benchmark.examples import tasks as example_tasks  # noqa: E402


def get_task(task_id: str):
    # The three example tasks only: no need to import (and depend on) the whole suite.
    return {t.id: t for t in example_tasks()}[task_id]


# ---------------------------------------------------------------- host CPU (parallel + AVX-512 vectors)
def cpu_matmul(sch: s_tir.Schedule) -> None:
    c = sch.get_sblock("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 32])
    jo, ji = sch.split(j, [None, 64])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(io, jo, ko, ki, ii, ji)
    cw = sch.cache_write(c, 0, "global")  # 32x64 accumulator tile stays in L1
    sch.reverse_compute_at(cw, jo)
    sch.parallel(sch.fuse(io, jo))
    sch.unroll(ki)
    sch.vectorize(sch.split(ji, [None, 16])[1])
    init = sch.decompose_reduction(c, ko)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.vectorize(sch.split(sch.get_loops(cw)[-1], [None, 16])[1])


def cpu_dwconv(sch: s_tir.Schedule) -> None:
    # Tiny (25x5x64, ~5 us): threads cost more than they save. Drop the padded copy (the border test
    # is per pixel, not per channel, so it stays out of the vector loop), and for each output row walk
    # the 3x3 window outermost with the 5 pixels x 64 channels unrolled/vectorised: each window weight
    # vector is loaded once per row and the row's accumulators stay in registers.
    sch.compute_inline(sch.get_sblock("pad"))
    y = sch.get_sblock("Y")
    n, h, w, ch, ry, rx = sch.get_loops(y)
    sch.reorder(n, h, ry, rx, w, ch)
    sch.unroll(ry)
    sch.unroll(rx)
    sch.unroll(w)
    sch.vectorize(ch)
    init = sch.decompose_reduction(y, ry)
    sch.vectorize(sch.get_loops(init)[-1])


def cpu_softmax(sch: s_tir.Schedule, lanes: int = 16) -> None:
    # The row max and row sum are serial dependency chains (one add/max per 4-cycle latency): rfactor
    # splits each into `lanes` independent partial results (unrolled, so they overlap in the pipeline).
    # Then all four stages run row by row, so the 1.5 KB exp row stays in L1.
    rf = {}
    for name in ("rowmax", "rowsum"):
        block = sch.get_sblock(name)
        _, k_inner = sch.split(sch.get_loops(block)[-1], [None, lanes])
        rf[name] = sch.rfactor(k_inner, 0)
    i, _ = sch.get_loops(sch.get_sblock("Y"))
    for block in (sch.get_sblock("rowsum"), rf["rowsum"], sch.get_sblock("exp"), sch.get_sblock("rowmax"),
                  rf["rowmax"]):
        sch.compute_at(block, i)
    for block in rf.values():
        sch.unroll(sch.get_loops(block)[-1])


# ---------------------------------------------------------------- GPU (OpenCL and CUDA share these)
def gpu_matmul(sch: s_tir.Schedule, tile: int = 4, threads: int = 8, k_tile: int = 16) -> None:
    c = sch.get_sblock("C")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, [None, threads, tile])
    j0, j1, j2 = sch.split(j, [None, threads, tile])
    k0, k1 = sch.split(k, [None, k_tile])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    cl = sch.cache_write(c, 0, "local")  # each thread accumulates a tile x tile block in registers
    sch.reverse_compute_at(cl, j1)
    for idx in (0, 1):  # A and B tiles staged in shared memory, loaded cooperatively
        shared = sch.cache_read(c, idx, "shared")
        sch.compute_at(shared, k0)
        fused = sch.fuse(*sch.get_loops(shared)[-2:])
        _, ty, tx = sch.split(fused, [None, threads, threads])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    sch.unroll(k1)
    sch.decompose_reduction(c, k0)


def gpu_dwconv(sch: s_tir.Schedule, threads: int = 64) -> None:
    sch.compute_inline(sch.get_sblock("pad"))  # the zero padding becomes a predicate on the load
    y = sch.get_sblock("Y")
    n, h, w, ch, ry, rx = sch.get_loops(y)
    bx, tx = sch.split(sch.fuse(n, h, w, ch), [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.unroll(ry)
    sch.unroll(rx)


def gpu_softmax(sch: s_tir.Schedule, threads: int = 128) -> None:
    # One block per row; the row max and sum are cross-thread reductions kept in shared memory.
    sch.compute_inline(sch.get_sblock("exp"))
    out = sch.get_sblock("Y")
    i, j = sch.get_loops(out)
    sch.bind(i, "blockIdx.x")
    _, tx = sch.split(j, [None, threads])
    sch.bind(tx, "threadIdx.x")
    for name in ("rowsum", "rowmax"):
        blk = sch.get_sblock(name)
        sch.compute_at(blk, i)
        sch.set_scope(blk, 0, "shared")
        _, rtx = sch.split(sch.get_loops(blk)[-1], [None, threads])
        sch.bind(rtx, "threadIdx.x")


def opencl_softmax(sch: s_tir.Schedule, rows_per_block: int = 16, lanes: int = 16) -> None:
    # For PoCL (work-items run as loops on CPU cores; barriers are costly) no cross-thread reduction:
    # one work-item per row, with explicit float16 vectors inside it (OpenCL's vector exp), the row
    # max/sum split into `lanes` partial results by rfactor, and the exp row in private memory.
    rf = {}
    for name in ("rowmax", "rowsum"):
        block = sch.get_sblock(name)
        _, k_inner = sch.split(sch.get_loops(block)[-1], [None, lanes])
        rf[name] = sch.rfactor(k_inner, 0)
    i, _ = sch.get_loops(sch.get_sblock("Y"))
    bx, tx = sch.split(i, [None, rows_per_block])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    for block in (sch.get_sblock("rowsum"), rf["rowsum"], sch.get_sblock("exp"), sch.get_sblock("rowmax"),
                  rf["rowmax"]):
        sch.compute_at(block, tx)
    for name in ("rowmax", "rowsum", "exp"):
        sch.set_scope(sch.get_sblock(name), 0, "local")
    for block in rf.values():
        sch.set_scope(block, 0, "local")
        sch.unroll(sch.get_loops(block)[-1])
    for name in ("Y", "exp"):
        sch.vectorize(sch.split(sch.get_loops(sch.get_sblock(name))[-1], [None, lanes])[1])


Schedule = Callable[[s_tir.Schedule], None]
CANDIDATES: list[tuple[str, str, str, Schedule]] = [
    ("ex-matmul-256", "host-cpu", "host-cpu/matmul.py", cpu_matmul),
    ("ex-dwconv3x3-kws", "host-cpu", "host-cpu/dwconv3x3.py", cpu_dwconv),
    ("ex-softmax-512x384", "host-cpu", "host-cpu/softmax.py", cpu_softmax),
    ("ex-matmul-256", "opencl-pocl", "opencl-pocl/matmul.py", gpu_matmul),
    ("ex-dwconv3x3-kws", "opencl-pocl", "opencl-pocl/dwconv3x3.py", gpu_dwconv),
    ("ex-softmax-512x384", "opencl-pocl", "opencl-pocl/softmax.py", opencl_softmax),
    ("ex-matmul-256", "cuda", "cuda/matmul.py", gpu_matmul),
    ("ex-dwconv3x3-kws", "cuda", "cuda/dwconv3x3.py", gpu_dwconv),
    ("ex-softmax-512x384", "cuda", "cuda/softmax.py", gpu_softmax),
]


def candidate_text(task_id: str, target: str, schedule: Schedule) -> str:
    sch = s_tir.Schedule(get_task(task_id).build())
    schedule(sch)
    return f"# leka: task={task_id} target={target}\n" + sch.mod["main"].script() + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="run runnable ones vs NumPy and the naive baseline")
    args = ap.parse_args()
    import numpy as np
    import tvm

    from leka.compiler import build, default_schedule
    from leka.runners import get_runner
    from leka.targets import get_target

    for task_id, target, rel, schedule in CANDIDATES:
        text = candidate_text(task_id, target, schedule)
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        art = build(tvm.script.from_source(text), target)
        line = f"{rel:28s} {len(art.kernels)} kernel(s) {art.source_kind:8s} built in {art.compile_s:.3f}s"
        if args.check and get_target(target).runnable:
            task = get_task(task_id)
            inputs = task.generate_inputs(np.random.default_rng(0), "normal")
            expected = task.run_reference(inputs)
            nan_outs = [np.full(o.shape, np.nan, o.dtype) for o in task.outputs]
            loaded_by_label = {}
            for label, a in (("cand", art), ("naive", build(default_schedule(task.build(), target), target))):
                loaded = get_runner(target).load(a)
                loaded.upload(inputs + nan_outs)
                loaded.run()
                got = loaded.download()[len(inputs):]
                ok = all(np.allclose(g, e, rtol=1e-4, atol=1e-5 * float(np.abs(e).max()))
                         for g, e in zip(got, expected))
                loaded_by_label[label] = loaded
                line += f" | {label}: {'ok' if ok else 'WRONG'}"
            # Alternate candidate and naive, 5 rounds, median: the shared CPU's load drifts.
            samples: dict[str, list[float]] = {"cand": [], "naive": []}
            for _ in range(5):
                for label, loaded in loaded_by_label.items():
                    samples[label].append(loaded.time(10))
            times = {k: float(np.median(v)) for k, v in samples.items()}
            line += f" | cand {times['cand'] * 1e3:.3f} ms, naive {times['naive'] * 1e3:.3f} ms"
            line += f" | speedup {times['naive'] / times['cand']:.1f}x"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
