"""The model build, run in its own process: `python -m leka.optimize.build_job JOB.json`.

Winning kernels are candidate text (TVMScript from a method), so they are parsed, compiled and executed
here, never in the process that judges them (docs/architecture.md, trust boundaries). The job re-imports
the model (deterministic, so kernel names match), puts the winners in place of their PrimFuncs, builds the
whole model with relax for the target (a winner's weight packing split out and done at build time,
leka/optimize/prepack.py), exports the library, runs it on the inputs it is given (the parent
compares the outputs with ONNX Runtime) and times it against the tvm-naive and tvm-dlight builds and ONNX
Runtime, interleaved over rounds with the same thread count (e2e_timing.py). Writes JOB's "result" path as JSON.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .e2e_timing import alternate

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


# TVM's pool workers spin for ~150 ms after a parallel call (TVM_THREAD_POOL_SPIN_COUNT, default 300000 yields):
# they ran on through ONNX Runtime's next batch (its mobilenet_v2 0.66 -> 0.80 ms a call). At 3000 they stop within
# ~1 ms and still never sleep between the kernels of one call (squeezenet1_1 alone: 0.61 ms a call either way).
TVM_SPIN_COUNT = "3000"


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
