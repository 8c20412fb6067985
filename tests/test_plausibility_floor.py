"""The timing plausibility check with the parent's trusted bounds (leka/evaluator/floor.py, cpu_time.py):
a per-run floor from the bytes every run must write, and the worker's CPU time and run-queue wait instead of
the wall clock on a loaded machine. Replies here are synthetic, shaped like real ones (figures in comments
measured on this 2-core machine); tests/test_adversarial.py runs the same checks through real workers."""
from __future__ import annotations

import os

import pytest

from leka.evaluator.cpu_time import Usage, tree_usage
from leka.evaluator.floor import CALL_FLOOR_S, run_floor, store_ceiling
from leka.evaluator.timing import plausible
from leka.targets import get_target
from leka.tasks import ArgSpec, Task, get_task

DWCONV = "ex-dwconv3x3-kws"  # 32,000 output bytes


def _reply(cand_s: float, base_s: float, nc: int, nb: int, rounds: int = 40) -> dict:
    return {"candidate_s": [cand_s] * rounds, "baseline_s": [base_s] * rounds, "candidate_n": nc, "baseline_n": nb}


def _add(n: int) -> Task:
    f32 = "float32"
    return Task(id=f"l1-add-{n}", pattern="add", level=1, domain="test", dtype=f32, layout="",
                args=(ArgSpec("A", (n,), f32), ArgSpec("B", (n,), f32), ArgSpec("C", (n,), f32, "output")),
                build=lambda: None, reference=lambda a, b: a + b, flops=n, bytes=12 * n)


def test_floor_is_the_output_bytes_at_a_generous_store_ceiling():
    cpu = get_target("host-cpu")
    floor = run_floor(get_task(DWCONV), cpu)
    cores = max(int(cpu.facts["cores"]), 1)
    assert floor.out_bytes == 25 * 5 * 64 * 4
    assert floor.seconds == pytest.approx(CALL_FLOOR_S + 32_000 / (cores * 768e9))
    assert "32,000 output bytes" in floor.describe()
    # a parallel kernel may store from every thread of the pool; a GPU far faster than any CPU
    assert store_ceiling(cpu, threads=cores * 4)[0] == 4 * store_ceiling(cpu)[0]
    assert store_ceiling(get_target("cuda"))[0] > store_ceiling(cpu, threads=64)[0]


def test_a_run_shorter_than_its_floor_is_rejected_and_honest_tiny_kernels_are_not():
    floor = run_floor(get_task(DWCONV), get_target("host-cpu"))
    # lie-scale on the dwconv example: rounds of 142 runs claiming 3.3 ns a run (honest: ~3.3 µs)
    lie = _reply(3.3e-9, 3.3e-6, 142, 140)
    assert "below the task's floor" in plausible(lie, 0.4, 2.0, floor=floor)
    assert plausible(_reply(3.3e-6, 3.3e-6, 142, 140), 0.4, 2.0, floor=floor) is None
    assert "baseline runs" in plausible(_reply(3.3e-6, 3.3e-9, 142, 140), 0.4, 2.0, floor=floor)
    # a 64-element add: ~65 ns a run measured (load 15), ~55x its floor of ~1.2 ns
    add = run_floor(_add(64), get_target("host-cpu"))
    assert add.seconds < 65e-9 / 20
    assert plausible(_reply(65e-9, 65e-9, 540, 620), 0.2, 2.0, floor=add) is None


def test_a_loaded_machine_is_judged_by_cpu_time_not_wall_clock():
    """Fake wall clock: the worker waited for a core most of the request (load 9-12 here: 0.1 s of runs
    reported in 3 s; slowdowns of 4-9 measured at load 15). Its CPU time stays what the work took."""
    honest = _reply(2.5e-3, 2.6e-3, 1, 1, rounds=40)  # ~0.5 s of runs (timed and untimed)
    assert "inconsistent with wall clock" in plausible(honest, 20.0, 2.0)  # the wall clock alone: rejected
    assert plausible(honest, 20.0, 2.0, usage=Usage(cpu_s=0.9, wait_s=19.0)) is None
    # a worker dividing both sides by 1000 still cannot account for the CPU it used
    both = _reply(2.5e-6, 2.6e-6, 1, 1, rounds=40)
    assert "s of runs reported" in plausible(both, 20.0, usage=Usage(cpu_s=9.0, wait_s=11.0))


def test_short_rounds_are_judged_by_the_slowdown_the_worker_suffered():
    """Under load calibration runs are delayed too: rounds of 3 runs of 8.7 µs (0.026 ms) came out of a 2 ms
    calibration at load 9-12, and shorter at heavier load. The check loosens by the worker's slowdown (its
    run-queue wait over its CPU time, from the kernel), at most MAX_SLOWDOWN; a 1000x lie stays caught."""
    short = _reply(4.4e-6, 4.6e-6, 3, 3)  # 1/150 of the 2 ms aimed at
    assert "calibrated for 2 ms" in plausible(short, 0.5, 2.0)  # quiet machine: suspicious
    assert plausible(short, 0.5, 2.0, usage=Usage(cpu_s=0.1, wait_s=0.4)) is None  # slowdown 5
    lie = _reply(1e-6, 1e-3, 2, 2)  # a 1 ms kernel in rounds of 2 runs, reported 1000x shorter
    for wait in (0.0, 0.4, 100.0):
        assert "calibrated for 2 ms" in plausible(lie, 0.5, 2.0, usage=Usage(cpu_s=0.1, wait_s=wait))


def test_usage_of_a_process_tree_is_read_from_proc():
    me = tree_usage([os.getpid()])
    sum(i * i for i in range(300_000))  # some CPU
    later = tree_usage([os.getpid(), 2 ** 22 + 12345])  # a pid that does not exist is skipped
    assert me is not None and later is not None
    assert (later - me).cpu_s >= 0 and (later - me).slowdown >= 1.0
    assert tree_usage([2 ** 22 + 12345]) is None
