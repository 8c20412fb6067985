"""Timing the candidate cannot influence: the timed callable is the loaded library's own time_evaluator, and
before every timed run a preproc of ours poisons the outputs and rolls the inputs, so a kernel that reuses a
previous run's answer (found in its output, or cached in a scratch buffer) is timed doing the work. A worker
reply whose timings do not fit the wall clock is rejected."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import tvm

from leka.compiler import build
from leka.evaluator import EvalConfig, Evaluator
from leka.evaluator.pool import Worker
from leka.evaluator.timing import alternate as alternate_rounds
from leka.evaluator.timing import plausible
from leka.remote.job import parse_candidate
from leka.runners import get_runner
from leka.runners.poison import _call_script

ROOT = Path(__file__).resolve().parents[1]


def _sig(n: int) -> str:
    return (f'def main(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"), '
            f'C: T.Buffer(({n}, {n}), "float32")):\n    T.func_attr({{"tirx.noalias": True}})\n')


def _matmul(n: int, indent: str = "    ") -> str:
    lines = [f"for i, j in T.grid({n}, {n}):", "    C[i, j] = T.float32(0.0)", f"    for k in range({n}):",
             "        C[i, j] = C[i, j] + A[i, k] * B[k, j]"]
    return "".join(indent + ln + "\n" for ln in lines)


def honest(n: int = 128) -> str:
    return "@T.prim_func\n" + _sig(n) + _matmul(n)


def reuse(n: int = 128) -> str:
    """Computes C[0, 0] alone; when the output already holds it (bit for bit), skips the rest."""
    return "@T.prim_func\n" + _sig(n) + f"""    s = T.decl_buffer((1,), "float32", scope="local")
    s[0] = T.float32(0.0)
    for k in range({n}):
        s[0] = s[0] + A[0, k] * B[k, 0]
    if T.reinterpret("int32", C[0, 0]) != T.reinterpret("int32", s[0]):
""" + _matmul(n, "        ")


# Keeps its answer in a heap scratch buffer keyed by a few input elements (the allocator hands the same
# memory back on the next call), and copies it out when they match.
CACHE = "@T.prim_func\n" + _sig(128) + """    cache = T.decl_buffer((16400,), "float32")
    if cache[0] == A[0, 0] and cache[1] == A[77, 5] and cache[2] == B[3, 100] and cache[3] == T.float32(4242.0):
        for i, j in T.grid(128, 128):
            C[i, j] = cache[16 + i * 128 + j]
    else:
""" + _matmul(128, "        ") + """        for i, j in T.grid(128, 128):
            cache[16 + i * 128 + j] = C[i, j]
        cache[0] = A[0, 0]
        cache[1] = A[77, 5]
        cache[2] = B[3, 100]
        cache[3] = T.float32(4242.0)
"""


def _loaded(source: str):
    ld = get_runner("host-cpu").load(build(parse_candidate(source), "host-cpu"))
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2)]
    ld.upload(ins + [np.zeros((128, 128), np.float32)])
    return ld, ins


def _best(ld, n: int = 10, tries: int = 3) -> float:
    return min(ld.time(n) for _ in range(tries))


def test_timed_callable_is_tvms_time_evaluator_calling_the_library_kernel(monkeypatch):
    ld, ins = _loaded(honest())
    ld.arm([2])
    seen = []
    real = tvm.runtime.Module.time_evaluator

    def spy(self, func_name, dev, **kw):
        seen.append((self, func_name, kw))
        return real(self, func_name, dev, **kw)

    monkeypatch.setattr(tvm.runtime.Module, "time_evaluator", spy)
    assert ld.time(3) > 0
    (mod, name, kw), = seen
    # The timed function is our one-line wrapper around the library's kernel; the preproc runs untimed.
    assert mod.same_as(ld.preproc.call) and name == "call"
    assert kw["number"] == 1 and kw["repeat"] == 3 and kw["f_preproc"].startswith("leka.mix.")
    assert ld.preproc.module.same_as(ld.artifact.executable.mod) and ld.preproc.entry == ld.artifact.entry
    assert tvm.get_global_func(ld.preproc.kernel_name).same_as(ld.preproc.kernel)
    assert "call_packed" in _call_script([("A", (4,), "float32")], [0], "k") and "leka" not in ld.artifact.entry
    # Before each timed run the inputs were a fresh mix of the uploaded and alternate inputs; the outputs
    # are the product of the last mix.
    a, b, c = ld.download()
    alt = ld.preproc.alt[0]
    assert not np.array_equal(alt, ins[0]) and np.array_equal(np.sort(alt, axis=0), np.sort(ins[0], axis=0))
    assert np.all((a == ins[0]) | (a == alt)) and not np.array_equal(a, ins[0]) and not np.array_equal(a, alt)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    # The final run restores the uploaded inputs.
    ld.time(1, final=True)
    a, b, c = ld.download()
    np.testing.assert_array_equal(a, ins[0])
    np.testing.assert_allclose(c, ins[0] @ ins[1], rtol=1e-4, atol=1e-3)


def test_alternate_times_only_through_the_runner():
    calls = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def run(self):
            calls.append((self.name, "run"))

        def time(self, number):
            calls.append((self.name, "time", number))
            time.sleep(number * 1e-3)  # 1 ms per run, as the wall clock sees it
            return 1e-3

    out = alternate_rounds(Fake("c"), Fake("b"), min_rounds=3, max_rounds=3, min_time_s=0, min_run_ms=2.0)
    assert out["candidate_n"] == out["baseline_n"] == 2 and len(out["candidate_s"]) == 3
    assert {c[1] for c in calls} == {"run", "time"}


@pytest.mark.parametrize("hack", [reuse(), CACHE], ids=["output-reuse", "scratch-cache"])
def test_answer_reusing_kernels_are_timed_doing_the_work(hack):
    fair, _ = _loaded(honest())
    cheat, _ = _loaded(hack)
    fair.arm([2])
    t_honest = _best(fair)
    # Without the preproc (the old protocol) the trick works: the kernel is timed skipping the work ...
    assert _best(cheat) < t_honest / 5
    # ... with it, every timed run does the work.
    cheat.arm([2])
    assert _best(cheat) > t_honest / 2


def test_output_reuse_kernel_through_the_evaluator_is_timed_doing_the_work():
    from leka.tasks import get_task

    task = get_task("ex-matmul-256")
    cfg = EvalConfig(trials=2, min_rounds=3, min_time_s=0.05)
    header = "# leka: task=ex-matmul-256 target=host-cpu\n"
    with Evaluator("host-cpu", cfg) as ev:
        h = ev.evaluate(task, header + honest(256))
        r = ev.evaluate(task, header + reuse(256))
    assert h.correct and h.speedup, h.error
    assert r.correct, (r.status, r.error)  # its answers are right: only its timing could be wrong
    assert r.speedup < 2 * h.speedup, (r.speedup, h.speedup)


def test_plausibility_of_timing_replies():
    honest = {"candidate_s": [1e-3] * 10, "baseline_s": [2e-3] * 10, "candidate_n": 2, "baseline_n": 1}
    assert plausible(honest, 0.3, 2.0) is None
    faked = {**honest, "candidate_s": [1e-6] * 10}
    assert "inconsistent with wall clock" in plausible(faked, 0.3, 2.0)  # rounds far shorter than calibrated
    assert "inconsistent with wall clock" in plausible({**faked, "baseline_s": [1e-6] * 10}, 2.0)
    assert "inconsistent with wall clock" in plausible({**honest, "baseline_s": [1.0] * 10}, 0.3)  # inflated
    assert "no runs" in plausible({"candidate_s": [], "baseline_s": []}, 0.3)
    assert "inconsistent" in plausible({**honest, "candidate_s": [-1e-3] * 10}, 0.3, 2.0)
    assert "malformed" in plausible({**honest, "candidate_s": ["1e-3"] * 10, "candidate_n": "x"}, 0.3, 2.0)
    # 1000x more, 1000x shorter runs (the same total work): beyond calibration's cap, or more runs than the
    # wall time has room for at the per-call floor
    assert "at most" in plausible({**honest, "candidate_s": [1e-6] * 10, "candidate_n": 20_000}, 0.3, 2.0)
    many = {"candidate_s": [4e-9] * 40, "baseline_s": [2.6e-6] * 40, "candidate_n": 9_000, "baseline_n": 200}
    assert "at least" in plausible(many, 0.05, 2.0)  # 360,000 runs cannot fit 50 ms at 0.1 µs each
    assert plausible({**many, "candidate_s": [4e-6] * 40, "candidate_n": 140}, 0.05, 2.0) is None  # honest


class FakingWorker(Worker):
    """A compromised worker: reports the candidate 1000x faster than it ran (the runs per round unchanged)."""

    def request(self, req, timeout_s):
        reply = super().request(req, timeout_s)
        if req.get("op") == "time" and reply.get("ok"):
            reply["candidate_s"] = [t / 1000 for t in reply["candidate_s"]]
        return reply


def test_a_faked_timing_reply_is_rejected():
    from leka.tasks import get_task

    task = get_task("ex-softmax-512x384")
    src = (ROOT / "tests" / "corpus" / "correct_naive.py").read_text()
    ev = Evaluator("host-cpu", EvalConfig(trials=1, min_rounds=3, min_time_s=0.02))
    ev.worker = FakingWorker(ev.config.mem_limit_gb, ev.threads)
    with ev:
        res = ev.evaluate(task, src)
    assert res.failure == "wrong" and "inconsistent with wall clock" in res.error, (res.status, res.error)


@pytest.mark.skipif(not __import__("leka.targets", fromlist=["get_target"]).get_target("opencl-pocl").runnable,
                    reason="no OpenCL device (PoCL)")
def test_opencl_runner_mixes_inputs_and_poisons_outputs_between_timed_runs():
    art = build(parse_candidate((ROOT / "examples" / "opencl-pocl" / "matmul.py").read_text()), "opencl-pocl")
    ld = get_runner("opencl-pocl").load(art)
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2)]
    ld.upload(ins + [np.zeros((256, 256), np.float32)])
    ld.arm([2])
    assert ld.time(3) > 0
    a, b, c = ld.download()
    alt = ld.armed[0][0]
    assert not np.array_equal(a, ins[0]) and np.all((a == ins[0]) | (a == alt))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    ld.time(1, final=True)
    a, b, c = ld.download()
    np.testing.assert_array_equal(a, ins[0])
    np.testing.assert_allclose(c, ins[0] @ ins[1], rtol=1e-4, atol=1e-3)


# -- timed runs checked at random (a kernel that skips the work only when timed has nothing to tell apart) -------
def _as_mix(given: np.ndarray, uploaded: np.ndarray, alt: np.ndarray) -> bool:
    """`given` takes every element from the uploaded inputs or their alternate, and is neither of them."""
    return bool(np.all((given == uploaded) | (given == alt))) and not np.array_equal(given, uploaded)


def test_timed_runs_are_kept_for_checking_after_they_ran():
    from leka.runners.poison import CHECK_SLOTS

    ld, ins = _loaded(honest())
    ld.arm([2])
    for _ in range(CHECK_SLOTS):  # rounds of one run: each run is kept by the check after its round
        ld.time(1)
    kept = ld.preproc.checked_runs()
    # time_evaluator's untimed first call of each round is not a timed run: only the four timed ones count
    assert sorted(k["run"] for k in kept) == list(range(1, CHECK_SLOTS + 1))
    ld.time(6)
    ld.time(1, final=True)  # the final run restores the uploaded inputs: not one of the sampled runs
    kept = ld.preproc.checked_runs()
    assert len(kept) == CHECK_SLOTS and all(1 <= k["run"] <= CHECK_SLOTS + 6 for k in kept)
    for k in kept:
        a, b = k["inputs"]
        assert _as_mix(a, ins[0], ld.preproc.alt[0]) and _as_mix(b, ins[1], ld.preproc.alt[1])
        assert all(np.array_equal(x, y) for x, y in zip(k["inputs"], k["inputs_after"]))
        np.testing.assert_allclose(k["outputs"][0], a @ b, rtol=1e-4, atol=1e-3)


def test_graph_timed_calls_are_kept_for_checking():
    from leka.candidate import parse_header
    from leka.evaluator.graph_exec import load_graph
    from leka.targets import get_target
    from leka.tasks import get_task

    src = (ROOT / "tests" / "adversarial" / "c7_graph_outputs" / "correct_mfcc_graph.py").read_text()
    task = get_task(parse_header(src)["task"])
    args = [(a.name, tuple(a.shape), a.dtype, a.role) for a in task.args]
    g = load_graph(build(parse_candidate(src), "host-cpu"), get_target("host-cpu"), args)
    ins = task.generate_inputs(np.random.default_rng(0), "normal")
    g.upload(ins)
    g.arm([])
    g.time(1)
    g.time(2)
    kept = g.preproc.checked_runs()
    assert sorted(k["run"] for k in kept) == [1, 2, 3]
    for k in kept:
        assert not all(np.array_equal(x, u) for x, u in zip(k["inputs"], ins))
        for got, ref in zip(k["outputs"], task.run_reference(k["inputs"]), strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3 * float(np.max(np.abs(ref))))


def test_parent_checks_each_kept_timed_run_against_the_reference():
    from leka.evaluator.correctness import check_timed_runs
    from leka.tasks import get_task

    task = get_task("ex-matmul-256")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    good = {"run": 7, "inputs": [a, b], "inputs_after": [a, b], "outputs": [a @ b]}
    assert check_timed_runs(task, [good, {**good, "run": 9}]) == ("", None)
    assert check_timed_runs(task, []) == ("", None)
    skipped = {**good, "run": 12, "outputs": [np.zeros_like(a)]}
    where, v = check_timed_runs(task, [good, skipped])
    assert where.startswith("timed run 12") and not v.ok and "elements differ" in v.reason
    where, v = check_timed_runs(task, [{**good, "inputs_after": [a, b * 2]}])
    assert "was modified" in v.reason
    for bad in ([{**good, "inputs": [a]}], [{**good, "inputs": [a, b.astype(np.float64)]}],
                [{**good, "run": "7"}], ["x"], {"run": 1}, [{**good, "outputs": []}]):
        where, v = check_timed_runs(task, bad)
        assert v is not None and not v.ok, bad


def test_a_timed_run_off_by_rounding_on_a_few_elements_is_not_called_wrong():
    """Mixed inputs can be worse conditioned than the trials' (a reassociated exp-of-sum was 3e-4-6e-4 off on
    1-2 of 2048 elements against rtol 1e-4): a few elements within 10x the tolerance pass the timed-run check;
    poison, another run's answer, or many elements off do not."""
    from leka.evaluator.correctness import check_timed_runs
    from leka.tasks import get_task

    task = get_task("ex-matmul-256")
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    ref = a @ b
    rtol, _ = task.tolerance()

    def run(out):
        return [{"run": 3, "inputs": [a, b], "inputs_after": [a, b], "outputs": [out]}]

    few = ref.copy()
    few.flat[[5, 900]] *= 1 + 5 * rtol
    assert check_timed_runs(task, run(few)) == ("", None)
    for bad in (np.where(np.arange(ref.size).reshape(ref.shape) == 7, np.nan, ref).astype(np.float32),
                ref * (1 + 50 * rtol), (ref * (1 + 2 * rtol)).astype(np.float32), b @ a):
        where, v = check_timed_runs(task, run(bad.astype(np.float32)))
        assert v is not None and not v.ok and where.startswith("timed run 3")


def test_every_timed_run_is_equally_likely_to_be_checked():
    """The sample is uniform over the timed runs (reservoir sampling): late runs of late rounds are checked as
    often as early ones, so skipping the work on some rounds only is caught in proportion."""
    from leka.runners.poison import CHECK_SLOTS

    ld = get_runner("host-cpu").load(build(parse_candidate(honest(8)), "host-cpu"))
    rng = np.random.default_rng(0)
    runs = []
    for _ in range(40):
        ld.upload([rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)] + [np.zeros((8, 8), np.float32)])
        ld.arm([2])
        for n in (1, 7, 16, 16, 24):  # 64 timed runs, rounds of different sizes
            ld.time(n)
        runs += [k["run"] for k in ld.preproc.checked_runs()]
    assert len(runs) == 40 * CHECK_SLOTS and min(runs) >= 1 and max(runs) <= 64
    late = sum(r > 32 for r in runs) / len(runs)  # expected 0.5 (sd ~0.04)
    last = sum(r > 48 for r in runs) / len(runs)  # the last round: expected 0.25
    assert 0.35 < late < 0.65 and 0.13 < last < 0.37, (late, last)


def test_numpy_preproc_of_other_devices_keeps_timed_runs_the_same_way():
    """The Python preproc (CUDA and other non-CPU devices) on a CPU kernel: the same sample, the same contents."""
    from leka.runners.poison import CHECK_SLOTS, Preproc

    ld, ins = _loaded(honest())
    pre = Preproc(ld.artifact.executable.mod, ld.artifact.entry, ld.tensors, ld.params, [2], ld.dev, callback=True)
    for n in (1, 1, 1, 1, 5):
        timer, args = pre.timer(n)
        assert timer(*args).results
    kept = pre.checked_runs()
    assert len(kept) == CHECK_SLOTS and all(1 <= k["run"] <= 9 for k in kept)
    for k in kept:
        a, b = k["inputs"]
        assert _as_mix(a, ins[0], pre.alt[0]) and all(np.array_equal(x, y) for x, y in zip(k["inputs"], k["inputs_after"]))
        np.testing.assert_allclose(k["outputs"][0], a @ b, rtol=1e-4, atol=1e-3)


def test_unbalanced_sides_end_at_min_rounds_not_max_rounds():
    """A fast candidate against a slow default build: the candidate's rounds are lengthened to the baseline's
    (up to min_time_s / min_rounds), so both sides are done in about min_rounds (before: rounds of ~1 ms went on to
    max_rounds=40 to give the candidate its min_time_s, and the 59 ms baseline ran 40 times along)."""
    import time

    from leka.evaluator.timing import alternate

    class Sleeper:
        def __init__(self, s: float) -> None:
            self.s, self.runs = s, 0

        def run(self) -> None:
            self.time(1)

        def time(self, number: int) -> float:
            self.runs += number
            time.sleep(self.s * number)
            return self.s

    cand, base = Sleeper(0.0005), Sleeper(0.02)
    out = alternate(cand, base, min_rounds=7, max_rounds=40, min_time_s=0.08, min_run_ms=2.0)
    # the first round is calibrated to min_run_ms, the rest lengthened: min_rounds, or one more
    assert len(out["baseline_s"]) <= 8 and out["candidate_n"] >= 20, (len(out["baseline_s"]), out["candidate_n"])
    assert base.runs <= 2 + 1 + 8  # warm-up, one calibration run (it lasts 5 rounds' worth), the rounds
    even = alternate(Sleeper(0.0005), Sleeper(0.0005), min_rounds=7, max_rounds=40, min_time_s=0.08, min_run_ms=2.0)
    assert even["candidate_n"] == even["baseline_n"] and len(even["candidate_s"]) >= 20  # balanced: unchanged
