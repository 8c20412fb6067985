"""The model build, run in its own process: `python -m leka.optimize.build_job JOB.json`.

Winning kernels are candidate text (TVMScript from a method), so they are parsed, compiled and executed
here, never in the process that judges them (docs/architecture.md, trust boundaries). The job re-imports
the model (deterministic, so kernel names match), puts the winners in place of their PrimFuncs, builds the
whole model with relax for the target (a winner's weight packing split out and done at build time,
leka/optimize/prepack.py), exports the library, runs it on the inputs it is given (the parent
compares the outputs with ONNX Runtime) and times it against the tvm-naive and tvm-dlight builds and ONNX
Runtime, interleaved over rounds with the same thread count. Writes JOB's "result" path as JSON.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from leka.evaluator.cpu_time import thread_times
from leka.evaluator.sandbox import thread_priority

_IMPORT_RE = re.compile(r"^(from tvm(\.script)? import .*|import tvm.*)$", re.M)


def with_winners(fused: Any, replace: dict[str, str]) -> Any:
    """`fused` with each named PrimFunc replaced by the `main` of a winner's TVMScript."""
    import tvm

    out = tvm.IRModule(dict(fused.functions_items()), attrs=fused.attrs)
    for name, source in replace.items():
        parsed = tvm.script.from_source(_IMPORT_RE.sub(lambda m: "# " + m.group(0), source))
        func = parsed if isinstance(parsed, tvm.tirx.PrimFunc) else parsed["main"]
        # marked scheduled: dlight's pass over the GPU build (compile_model) must leave a winner as it is
        out.update_func(out.get_global_var(name), func.with_attr("global_symbol", name).with_attr(
            "tirx.is_scheduled", True))
    return out


def with_dlight(fused: Any, target: Any) -> Any:
    """The tvm-dlight baseline: dlight's default rules for the target family on every kernel one applies to."""
    from leka.compiler.schedules import apply_dlight

    return apply_dlight(fused, target, "cpu" if target.kind.name == "llvm" else "gpu")


def exec_mode_for(preset: Any) -> str:
    """How the model's main function runs: on CPU compiled to machine code (relax exec_mode "compiled"), so the
    kernel calls are not dispatched one bytecode instruction at a time: a small recurrent model is ~150 kernel
    calls of ~0.5 µs and the dispatch was a share of it (experiments/vm_exec_mode.py); on GPUs the bytecode VM,
    which TVM's CUDA graph capture is written for."""
    return "compiled" if preset.family == "cpu" else "bytecode"


def compile_model(mod: Any, preset: Any, exec_mode: str | None = None) -> Any:
    """The model built for the preset (every build the comparison times too: optimised, tvm-naive, tvm-dlight,
    so that it compares kernels). On CUDA the static regions of the model (every kernel launch between the
    input and the output) are captured once into a CUDA graph and replayed (TVM's RewriteCUDAGraph): a small
    model is launch-bound, MobileNetV3-small's 51 kernels ran 0.41 ms one launch at a time and 0.35 ms replayed
    (dlight kernels) on an H100; the GPU baseline (tvm-dlight) gets the same."""
    import tvm

    target = preset.tvm_target()
    config = {}
    if preset.family != "cpu":  # device code needs a host; GPU kernels left unscheduled get dlight
        target = tvm.target.Target(preset.target, host={"kind": "llvm"})
        mod = with_dlight(mod, target)
        config = {"relax.backend.use_cuda_graph": preset.family == "cuda"}
    with tvm.transform.PassContext(config=config):
        return tvm.relax.build(mod, target=target, exec_mode=exec_mode or exec_mode_for(preset))


def _vm_runner(exe: Any) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    import tvm
    from tvm import relax

    from .runtime import VMCall

    dev = tvm.cpu()
    return VMCall(relax.VirtualMachine(exe, dev)["main"], dev)


def _ort_runner(model_path: str, names: list[str], threads: int,
               spin: bool = True) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # ORT's workers spin between parallel sections, as users run it: turned off, every section woke a sleeping
    # thread, which on a VM cost it up to half its speed (squeezenet1_1: 0.31 ms a call spinning, 0.47 without).
    # What a spinning pool would steal from the next build's batch is waited out instead (settle).
    # (spin=False: as the comparison ran ORT before eeb2029, for experiments/retime_artifacts.py)
    if not spin:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model_path, sess_options=opts, providers=["CPUExecutionProvider"])
    return lambda inputs: list(sess.run(None, dict(zip(names, inputs))))


MIN_BATCHES = 3  # batches a round makes at least, unless one batch already outlasts the round
ROUNDS = 5  # rounds of the end-to-end comparison; medians and spreads are across them (timing_verdict.py)
# builds faster than this a call get one untimed call before each batch, all alike (slower ones: the warm-up
# would cost a round's time, and a cold start is a small share of their call)
WARM_CALL_S = 0.05
# a batch: this long of timed calls of one build in a row, at least one call. 2 ms batches timed a 1.05 ms
# squeezenet build at 1.50 ms and ONNX Runtime's 0.47 ms at 0.59 (one call after another build's is slow:
# threads asleep, caches cold); 10 ms batches: 1.20 and 0.53, same run
BATCH_S = 0.01
RUNNERS = 4  # the builds timed: optimised, tvm-naive, tvm-dlight, ONNX Runtime
# TVM's pool workers spin for ~150 ms after a parallel call (TVM_THREAD_POOL_SPIN_COUNT, default 300000 yields):
# they ran on through ONNX Runtime's next batch (its mobilenet_v2 0.66 -> 0.80 ms a call). At 3000 they stop within
# ~1 ms and still never sleep between the kernels of one call (squeezenet1_1 alone: 0.61 ms a call either way).
TVM_SPIN_COUNT = "3000"
# A comparison build (tvm-naive, tvm-dlight) this slow a call is timed in SLOW_COMPARISON_ROUNDS rounds: light_vgg19's
# take 24 and 17 s a call, and 5 rounds of them were 3.5 of its minutes=10 (the optimised build and ONNX Runtime,
# the figure the run is for, still get every round)
SLOW_COMPARISON_S = 1.0
SLOW_COMPARISON_ROUNDS = 2
SETTLE_MAX_S = 0.25  # the longest wait for the last build's threads to stop running before a batch
SETTLE_POLL_S = 0.002


def round_s(min_time_s: float, runners: int = RUNNERS, rounds: int = ROUNDS) -> float:
    """How long a round of the comparison lasts at least."""
    return min_time_s * runners / rounds


def batches_per_round(visit_s: float, round_len_s: float) -> int:
    """Batches a round makes at least: MIN_BATCHES, or one when a batch (one visit of every build) outlasts the
    round. The default and dlight builds of an unscheduled CNN take seconds a call: inception_v1's 3 batches x 5
    rounds were ~77 s of its 10 minutes; one batch a round still gives ROUNDS figures across rounds, which is
    where the median and spread come from."""
    return 1 if visit_s > round_len_s else MIN_BATCHES


def timing_reserve_s(default_s: float, time_s: float) -> float:
    """What the end-to-end comparison may take, `default_s` being one call of the default build (dlight's about
    the same) and the optimised build taken as no faster. With comparison builds of seconds a call: each one's
    first call (its batch size), then SLOW_COMPARISON_ROUNDS rounds of the three; the optimised build's further
    rounds fit when it is faster, and no round starts past the deadline (alternate)."""
    visit = 3 * default_s
    if default_s < SLOW_COMPARISON_S:
        return 4 * time_s + ROUNDS * batches_per_round(visit, round_s(time_s)) * visit
    return 4 * time_s + (1 + SLOW_COMPARISON_ROUNDS) * visit


def alternate(runners: dict[str, Callable[[list[np.ndarray]], Any]], inputs: list[np.ndarray],
              rounds: int = ROUNDS, min_time_s: float = 1.0, min_batches: int | None = None,
              deadline: float | None = None,
              comparisons: tuple[str, ...] = ()) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each runner's median ms per call over `rounds` rounds, and the host's load around the timing. A round
    lasts min_time_s * len(runners) / rounds and is made of batches (BATCH_S of calls per runner) visiting the
    runners in a fresh random order, so machine load and the scheduler's time slices fall on all of them
    alike; the round's figure is the median of its batches, and the reported median and spread are across
    rounds (the spread within a round hid 2x swings between identical runs on a loaded host). A batch of a
    build under WARM_CALL_S a call starts with one untimed call (_one_round). While some
    build's rounds still spread wider than timing_verdict.SPREAD_WARN, up to as many rounds again are run
    (the median of 10 swinging rounds moves less than that of 5). `deadline` (time.time()): no round starts
    that would end past it, so a model whose default build takes seconds a call is timed over fewer rounds
    (the figures say how many) instead of running past --budget minutes. Runners named in `comparisons` whose
    call takes SLOW_COMPARISON_S or more are timed in the first SLOW_COMPARISON_ROUNDS rounds only (their rows
    say so)."""
    from .timing_verdict import SPREAD_WARN

    number, per_call = _batch_sizes(runners, inputs)
    warm = {n for n, t in per_call.items() if t < WARM_CALL_S}
    capped = {n for n in comparisons if n in runners and per_call[n] >= SLOW_COMPARISON_S}
    samples: dict[str, list[list[float]]] = {n: [] for n in runners}
    rng = np.random.default_rng(0)
    round_len = round_s(min_time_s, len(runners), rounds)
    if min_batches is None:
        min_batches = batches_per_round(sum(per_call[n] * number[n] for n in runners), round_len)
    host: dict[str, Any] = {"cores": os.cpu_count() or 1, "load_before": os.getloadavg()[0]}
    # this process's threads (TVM's pool, ORT's) at the evaluator's timing priority, as its kernels are timed
    with thread_priority(os.getpid()):
        t_start, last_round_s, planned_s, settled = time.perf_counter(), 0.0, 0.0, 0.0
        while True:
            done = max(len(v) for v in samples.values())
            if done == rounds:
                planned_s = time.perf_counter() - t_start
            uncapped = {n: v for n, v in samples.items() if n not in capped}
            if done >= rounds and (done >= 2 * rounds or _spread_within(uncapped, SPREAD_WARN)):
                break
            # an extra round leaves as much time before the deadline as the planned rounds took (a withheld
            # or bisected build after this one is timed again)
            if done and deadline is not None and time.time() + last_round_s + planned_s > deadline:
                if done < rounds:
                    host["cut_short"] = f"{done} of {rounds} rounds: the budget's minutes"
                break
            t_round = time.perf_counter()
            visited = {n: r for n, r in runners.items() if n not in capped or done < SLOW_COMPARISON_ROUNDS}
            settled += _one_round(visited, inputs, number, samples, rng, min_batches, round_len, warm)
            last_round_s = time.perf_counter() - t_round
    host["load_after"] = os.getloadavg()[0]
    host["settle_s"] = round(settled, 3)  # waited for one build's threads to stop before the next batch
    if capped:
        host["comparisons_capped"] = sorted(capped)
    if done > rounds:
        host["extra_rounds"] = done - rounds
    return {n: _stats(v) for n, v in samples.items()}, host


def _batch_sizes(runners: dict[str, Callable[[list[np.ndarray]], Any]],
                 inputs: list[np.ndarray]) -> tuple[dict[str, int], dict[str, float]]:
    """Calls per batch of each runner (BATCH_S of calls) and the seconds one call took, after a warm-up call; a
    warm-up call of SLOW_COMPARISON_S or more is the figure (a cold call is a small share of such a call)."""
    per_call: dict[str, float] = {}
    for name, run in runners.items():
        t0 = time.perf_counter()
        run(inputs)
        per_call[name] = time.perf_counter() - t0
        if per_call[name] < SLOW_COMPARISON_S:
            t0 = time.perf_counter()
            run(inputs)
            per_call[name] = time.perf_counter() - t0
    return {n: max(1, int(BATCH_S / max(t, 1e-6))) for n, t in per_call.items()}, per_call


def settle(max_s: float = SETTLE_MAX_S) -> float:
    """Waits until no thread of this process but the caller has run for SETTLE_POLL_S (the last build's pool
    has stopped spinning: ONNX Runtime's workers run on ~40 ms after a call), at most max_s; the seconds waited."""
    pid, me, t0 = os.getpid(), threading.get_native_id(), time.perf_counter()
    before = thread_times(pid)
    while time.perf_counter() - t0 < max_s:
        time.sleep(SETTLE_POLL_S)
        now = thread_times(pid)
        ran = max((run - before.get(tid, (0.0, 0.0))[0] for tid, (run, _wait) in now.items() if tid != me),
                  default=0.0)
        if ran < 0.1 * SETTLE_POLL_S:
            break
        before = now
    return time.perf_counter() - t0


def _one_round(runners: dict[str, Callable[[list[np.ndarray]], Any]], inputs: list[np.ndarray],
               number: dict[str, int], samples: dict[str, list[list[float]]], rng: np.random.Generator,
               min_batches: int, round_len: float, warm: set[str]) -> float:
    """One round of batches in fresh random orders, appended to `samples`; returns the seconds spent waiting
    for the previous batch's threads (settle). A batch of a build in `warm` starts with one untimed call: the
    build visited before it has evicted its weights from the caches and its threads sleep (ONNX Runtime's
    0.47 ms squeezenet: 0.72-0.84 ms in 2 ms batches without it, 0.53-0.65 with)."""
    order = list(runners)
    for name in order:
        samples[name].append([])
    t_round, batches, settled = time.perf_counter(), 0, 0.0
    while batches < min_batches or time.perf_counter() - t_round < round_len:
        rng.shuffle(order)
        for name in order:
            settled += settle()
            if name in warm:
                runners[name](inputs)
            t0 = time.perf_counter()
            for _ in range(number[name]):
                runners[name](inputs)
            samples[name][-1].append((time.perf_counter() - t0) / number[name] * 1e3)
        batches += 1
    return settled


SPREAD_FLOOR_MS = 0.005  # rounds differing by less than this are alike whatever their ratio (timer noise)


def _spread_within(samples: dict[str, list[list[float]]], limit: float) -> bool:
    """Every runner's rounds so far (their medians, _stats) span at most `limit` of their median, or under
    SPREAD_FLOOR_MS."""
    for per_round in samples.values():
        st = _stats(per_round)
        if max(st["round_ms"]) - min(st["round_ms"]) > SPREAD_FLOOR_MS and st["range_rel"] > limit:
            return False
    return True


def _stats(per_round: list[list[float]]) -> dict[str, Any]:
    """Median, spread (IQR and range over the median) across rounds of the rounds' medians."""
    meds = [statistics.median(v) for v in per_round]
    med = statistics.median(meds)
    q = np.percentile(meds, [25, 75])
    rel = (lambda x: float(x / med) if med > 0 else 0.0)
    return {"median_ms": med, "min_ms": min(min(v) for v in per_round), "rounds": len(meds),
            "iqr_rel": rel(q[1] - q[0]), "range_rel": rel(max(meds) - min(meds)), "round_ms": meds,
            "batches": sum(len(v) for v in per_round)}


# a comparison build's compile, at most: dlight's CPU rules on inception_v3's 1x7/7x1 convolutions take 190 s of
# LLVM (naive: 2 s), which ran the model's whole --budget minutes=10 out with nothing written
REFERENCE_MAX_S = 300.0
REFERENCE_SHARE = 0.5  # of the time left before the job's deadline, what one comparison build's compile may take
REFERENCE_MIN_S = 1.0  # less left than this: not tried
REFERENCES = ("tvm-naive", "tvm-dlight")
LATENCY_CUT = ("not timed: the end-to-end comparison did not finish before the budget's minutes ran out (the build "
               "was verified; time it with more minutes)")


def _references(job: dict[str, Any], job_path: str,
                result: dict[str, Any]) -> dict[str, Callable[[list[np.ndarray]], Any]]:
    """The default (tvm-naive) and tvm-dlight builds the optimised one is timed against. They are for comparison
    only: each is compiled in a process of its own under a time bound (a share of what is left before the job's
    deadline, at most REFERENCE_MAX_S) and exported to job["refs_dir"], where a later try of the same model (the
    default build after a withheld one, a bisected build) finds it; one that fails or is cut off is left out and
    named in result["references_failed"] (before, a dlight error failed the whole build job and was blamed on the
    winners: bisected until the minutes ran out)."""
    import tvm

    runners = {}
    refs = Path(job["refs_dir"])
    refs.mkdir(parents=True, exist_ok=True)
    for name in REFERENCES:
        lib = refs / f"{name}.so"
        why = None if lib.exists() else _compile_reference(job, job_path, name, lib)
        if why is None:
            runners[name] = _vm_runner(tvm.runtime.load_module(str(lib)))
        else:
            result.setdefault("references_failed", {})[name] = why
    return runners


def _compile_reference(job: dict[str, Any], job_path: str, name: str, lib: Path) -> str | None:
    """Compiles one comparison build into `lib` in a child process; why it is not there, or None."""
    import subprocess

    deadline = job.get("deadline")
    bound = REFERENCE_MAX_S if deadline is None else min(REFERENCE_MAX_S, REFERENCE_SHARE * (deadline - time.time()))
    if bound < REFERENCE_MIN_S:
        return "not built: the budget's minutes had run out"
    try:
        proc = subprocess.run([sys.executable, "-m", "leka.optimize.build_job", job_path, "--reference", name,
                               str(lib)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=bound)
    except subprocess.TimeoutExpired:
        return (f"not built: its compile was cut off after {bound:.0f} s (half the time the budget's minutes left, "
                f"at most {REFERENCE_MAX_S:.0f} s)")
    if proc.returncode != 0 or not lib.exists():
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return f"its build failed: {lines[-1] if lines else f'exit {proc.returncode}'}"[:300]
    return None


def _export_reference(job: dict[str, Any], name: str, lib: str) -> int:
    """The child of _compile_reference: one comparison build compiled and exported (renamed into place whole)."""
    from leka.errors import one_line
    from leka.targets import get_target

    from .importer import import_model, parse_shapes

    preset = get_target(job["target"])
    try:
        _loaded, fused = import_model(job["model"], parse_shapes(job.get("shapes")), fused_rnn=preset.family == "cpu")
        mod = fused if name == "tvm-naive" else with_dlight(fused, preset.tvm_target())
        part = f"{lib}.part.so"
        compile_model(mod, preset).export_library(part)
        os.replace(part, lib)
    except Exception as e:  # noqa: BLE001 - the parent records the line; the artifact goes on without this build
        print(one_line(e, 300), file=sys.stderr)
        return 1
    return 0


def main(job_path: str, *reference: str) -> int:
    """The build job; with `--reference NAME LIB`, the child that compiles one comparison build."""
    job = json.loads(Path(job_path).read_text())
    if reference:
        return _export_reference(job, reference[1], reference[2])
    os.environ["TVM_NUM_THREADS"] = str(job["threads"])
    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", TVM_SPIN_COUNT)  # read once, when TVM's pool starts
    from leka.targets import get_target

    from .importer import import_model, parse_shapes
    from .prepack import prepack_weights, prepacked

    preset = get_target(job["target"])
    _loaded, fused = import_model(job["model"], parse_shapes(job.get("shapes")), fused_rnn=preset.family == "cpu")
    result: dict[str, Any] = {}
    t0 = time.perf_counter()
    winners = prepack_weights(with_winners(fused, job["replace"]))  # winners' weight packing, folded once
    result["prepacked"] = prepacked(winners)
    optimized = compile_model(winners, preset)
    result["build_s"] = time.perf_counter() - t0
    optimized.export_library(job["export"])
    if preset.runnable and preset.family == "cpu" and job.get("inputs"):
        arrays = np.load(job["inputs"])
        names = job["input_names"]
        run_opt = _vm_runner(optimized)
        n_sets = int(job["n_sets"])
        outs = {f"{s}:{i}": o for s in range(n_sets)
                for i, o in enumerate(run_opt([arrays[f"{s}:{n}"] for n in names]))}
        np.savez(job["outputs"], allow_pickle=False, **outs)
        if job.get("time"):  # what the parent keeps if it must stop the timing at the budget's deadline
            _write_result(job, {**result, "latency_cut": LATENCY_CUT})
            runners = {"optimized": run_opt, **_references(job, job_path, result),
                       "onnxruntime": _ort_runner(job["model"], names, int(job["threads"]))}
            result["latency"], result["latency_host"] = alternate(runners, [arrays[f"0:{n}"] for n in names],
                                                                  min_time_s=float(job.get("min_time_s", 1.0)),
                                                                  deadline=job.get("deadline"),
                                                                  comparisons=REFERENCES)
    _write_result(job, result)
    return 0


def _write_result(job: dict[str, Any], result: dict[str, Any]) -> None:
    """JOB's result file, replaced whole (the parent may stop this process at any moment and read it)."""
    part = Path(f"{job['result']}.part")
    part.write_text(json.dumps(result))
    os.replace(part, job["result"])


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
