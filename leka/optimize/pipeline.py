"""`leka optimize`, end to end: import, extract, profile, tune (or reuse the db), rebuild, verify, write OUT."""
from __future__ import annotations

import json
import shutil
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from leka.budget import with_minutes

from . import BuildFailedError, OptimizeError
from .artifact import CHECK_EXPECTED, CHECK_INPUTS, LIBRARY, MANIFEST, check_out, file_digests, staging
from .clock import WholeRun
from .db import TuningDB, Winner, target_key
from .extract import kernel_specs, make_task
from .importer import LoadedModel, import_model, parse_shapes
from .profile import KernelProfile, profile, split_budget
from .remote import REMOTE_STEPS
from .view import OptimizeView

DEFAULT_BUDGET = "minutes=10"
REFS_DIR = ".refs"  # in the staging folder: the comparison builds, compiled once for every try (build_job)
DEADLINE_MARGIN_S = 10.0  # the build job stops timing this long before the whole run's deadline


@dataclass
class OptimizeOptions:
    model: str
    target: str = "host-cpu"
    out: str | None = None  # default: MODEL stem + ".leka" next to the model
    shapes: list[str] = field(default_factory=list)
    budget: str | None = DEFAULT_BUDGET
    method: str = "leka"
    llm: str | None = None
    base_url: str | None = None
    jobs: int = 1
    db: str | None = None
    resume: bool | str | None = False  # True: the latest unfinished run; a str: that run id
    verify_sets: int = 4
    time_s: float = 1.0  # minimum seconds per build in the end-to-end latency comparison (0: skip it)
    quiet: bool = False
    rpc: str | None = None  # TRACKER_HOST:PORT:KEY: kernels are measured on that remote device
    executor: Any = None  # a leka.executors executor (Ray): one job per kernel; None: the pool, --jobs processes
    remote: bool = False  # kernels tuned by runs measured on a remote host, in rounds (optimize/remote.py)
    remote_store: str | None = None  # the pending-measurement store (default leka.remote.pending.default_pending_path())
    remote_steps: int = REMOTE_STEPS  # search steps (remote rounds) per kernel run; finalize's re-measure is one more
    remote_stop: bool = False  # end the waiting remote runs now with their best device-verified candidate

    def method_options(self) -> dict[str, Any]:
        return {k: v for k, v in (("llm", self.llm), ("base_url", self.base_url)) if v}


def default_out(model: str) -> Path:
    p = Path(model)
    return p.with_name(p.stem + ".leka")


def optimize(opts: OptimizeOptions, view: OptimizeView | None = None) -> Any:
    """Run the whole job; returns the manifest written to OUT, or with --remote while kernel runs wait for the
    remote host, a remote.RemoteWaiting (raises LekaError subclasses on bad input)."""
    from leka.budget import Budget
    from leka.methods import get_method
    from leka.targets import get_target

    view = view or OptimizeView(quiet=opts.quiet)
    preset = get_target(opts.target)
    out = check_out(opts.out or default_out(opts.model))
    Budget.parse(opts.budget)
    get_method(opts.method, opts.method_options())  # unknown method / options fail before any work
    if opts.jobs < 1:
        raise OptimizeError("--jobs must be >= 1")
    if opts.remote:
        _check_remote(opts, preset)
    clock = WholeRun(None if opts.remote else Budget.parse(opts.budget).limits.get("minutes"))
    loaded, profs, tune_opts = _import_and_profile(opts, preset, view, clock)
    whole = Budget.parse(opts.budget)
    if opts.remote:
        for p in profs:  # measured in rounds on the remote host: --remote-steps bounds each run, not a budget
            p.budget, p.quick, p.why_not = None, False, "remote run ended without a decision"
    elif not preset.runnable:
        for p in profs:  # nothing can be measured here: build-only (tuned kernels come from the db only)
            p.budget, p.quick, p.why_not = None, False, build_only_why(preset)
        view.say(f"not tuned or timed here: {build_only_why(preset)}")
    with TuningDB(opts.db) as db:
        # --remote: the same command again continues the run that waits for the remote host
        run_id, resumed = db.start_run(loaded.sha256, target_key(preset), opts.method, opts.resume or opts.remote)
        view.say(f"run {run_id}{' (resumed)' if resumed else ''}; tuning db {db.path}")
        view.kernels(profs)
        try:
            decisions, waiting, note = _decide(profs, preset, tune_opts, run_id, db, view)
            if waiting is not None:
                db.finish_run(run_id, "waiting-remote", {"store": waiting.store, "waiting": waiting.waiting})
                return waiting
            manifest = _build_and_write(opts, loaded, profs, decisions, preset, run_id, out, (whole, note), view,
                                        clock)
        except BaseException as e:
            db.finish_run(run_id, "failed" if not isinstance(e, KeyboardInterrupt) else "interrupted",
                          {"error": str(e)[:300]})
            raise
        db.finish_run(run_id, "done", {"out": str(out)})
    return manifest


def _import_and_profile(opts: OptimizeOptions, preset: Any, view: OptimizeView,
                        clock: WholeRun) -> tuple[LoadedModel, list[KernelProfile], OptimizeOptions]:
    """The model imported and its kernels profiled, both within the run's minutes, and the options tuning runs
    with: the minutes that remain for it once the build's reserve is kept (optimize.clock)."""
    with clock.bounded("importing the model"):
        loaded, fused = import_model(opts.model, parse_shapes(opts.shapes), fused_rnn=preset.family == "cpu")
        specs = kernel_specs(fused)
    import_s = clock.elapsed()
    view.say(f"imported {opts.model}: {len(loaded.model.graph.node)} ONNX nodes -> {len(specs)} distinct kernels "
             f"({sum(s.weight for s in specs)} calls); profiling the default build on {preset.name} ...")
    with clock.bounded("profiling the default build"):
        profs = profile(specs, preset)
    default_s = sum((p.default_ms or 0.0) * p.spec.weight for p in profs) / 1e3
    minutes = clock.tuning_minutes(import_s, sum(p.compile_s for p in profs), preset.runnable and opts.time_s > 0,
                                   opts.time_s, default_s)
    tune_opts = opts if minutes is None else replace(opts, budget=with_minutes(opts.budget, minutes))
    split_budget(profs, tune_opts.budget)
    return loaded, profs, tune_opts


def build_only_why(preset: Any) -> str:
    """Why a build-only target's kernels are not tuned here, and what tunes them."""
    if preset.family != "cuda":
        why = preset.why_not_runnable or "build-only target: not measurable here"
        return why if "docs/" in why else f"{why} (docs/targets.md)"
    return (f"no GPU here: tune with `--target {preset.name} --remote` (job folders run on the GPU host), "
            "docs/cuda.md")


def _check_remote(opts: OptimizeOptions, preset: Any) -> None:
    if preset.family not in ("cuda", "cpu"):
        raise OptimizeError(f"--remote runs job folders on cuda and cpu targets; {preset.name} is {preset.family}")
    if opts.method != "leka":
        raise OptimizeError(f"--remote tunes with the leka method (its runs pause on remote measurements), "
                            f"not {opts.method}")
    if opts.rpc or opts.executor is not None or opts.jobs != 1:
        raise OptimizeError("--remote measures in rounds of job folders: not with --rpc, --executor or --jobs")
    if opts.remote_steps < 1:
        raise OptimizeError("--remote-steps must be >= 1")
    if opts.remote_store is None:
        from leka.remote.pending import default_pending_path

        opts.remote_store = str(default_pending_path())


def _decide(profs: list[KernelProfile], preset: Any, opts: OptimizeOptions, run_id: str, db: TuningDB,
            view: OptimizeView) -> tuple[dict[str, Winner], Any, str]:
    """Decisions by kernel key: reused from the db (re-verified) when the entry settles the kernel
    (optimize.rounds.settles), else tuned now, in rounds while the minutes last, a re-verified entry kept as the
    incumbent; and with --remote, what still waits for the remote host (remote.RemoteWaiting, None when nothing
    does), and a line on how the budget ended."""
    from leka.budget import Budget

    from .rounds import settles, tune_in_rounds

    profs = [p for p in profs if not p.spec.fixed]  # scheduled as written: no db entry, no search
    minutes = Budget.parse(opts.budget).limits.get("minutes")  # tuning's minutes: re-verifying counts in them
    until = time.time() + minutes * 60 if minutes and preset.runnable else None
    tkey = target_key(preset)
    reusable = {p.spec.key: w for p in profs if (w := db.get(p.spec.key, tkey)) is not None}
    measure = preset.runnable and not opts.remote and not opts.rpc
    found = _reverify(profs, reusable, preset, db, tkey, view, measure) if reusable else {}
    decisions = {p.spec.key: found[p.spec.key] for p in profs if p.spec.key in found and settles(found[p.spec.key], p)}
    incumbents = {k: w for k, w in found.items() if k not in decisions}
    for p in profs:
        if p.spec.key in decisions:
            p.budget = None
        elif p.spec.key in incumbents:
            view.set(p.spec.key, "queued", "db entry from a smaller budget or the quick pass: tuned further")
    with view:
        if opts.remote:
            from .remote import tune_remote

            new, waiting = tune_remote([p for p in profs if p.spec.key not in decisions], preset, opts, run_id, db,
                                       view.event)
            return {**decisions, **new}, waiting, "remote rounds"
        from leka.executors.pool import PoolExecutor
        from leka.executors.tuning import tune_on_executor

        executor = opts.executor if opts.executor is not None else PoolExecutor(opts.jobs)  # --jobs processes here

        def tune(todo: list[KernelProfile], attempt: int) -> dict[str, Winner]:
            return tune_on_executor(executor, todo, preset, opts.method, opts.method_options(), run_id, db, view.event,
                                    rpc=opts.rpc, until=until, attempt=attempt)

        rest = [p for p in profs if p.spec.key not in decisions]
        tuned, note = tune_in_rounds(rest, profs, {**decisions, **incumbents}, tune, preset, db, until, view.say)
        view.say(note)
        decisions.update(tuned)
    return decisions, None, note


def _reverify(profs: list[KernelProfile], found: dict[str, Winner], preset: Any, db: TuningDB, tkey: str,
              view: OptimizeView, measure: bool) -> dict[str, Winner]:
    """Db entries checked again by the evaluator before use (no budget is spent on them). The db is a cache,
    not an oracle: with `measure` (a target measurable here), a reused winner is re-measured against the
    default kernel and must pass the winner test again (tune.is_winner), its entry then refreshed with this
    measurement; one that does not is deleted and the kernel tuned again. A build-only target's entries are
    checked for correctness only (and say so)."""
    from leka.evaluator import Evaluator

    from .tune import eval_config, is_winner

    ok: dict[str, Winner] = {}
    by_key = {p.spec.key: p for p in profs}
    with Evaluator(preset, eval_config([by_key[k].spec for k in found], measure=measure)) as ev:
        for key, w in found.items():
            if w.source is None:
                ok[key] = w
                view.set(key, "db: default kept")
                continue
            r = ev.evaluate(make_task(by_key[key].spec, preset), w.source, measure=measure).to_json()
            why = _reuse_refusal(r, measure, is_winner(r))
            if why:
                db.delete(key, tkey)
                view.set(key, "queued", f"db entry {why}; re-tuning")
                continue
            if measure:
                w = replace(w, speedup=r["speedup"], candidate_ms=r.get("candidate_ms"),
                            baseline_ms=r.get("baseline_ms"), detail={**w.detail, "remeasured": _remeasure(r)})
                db.put(w, tkey, refresh=True)
            ok[key] = w
            view.set(key, "db: reused", f"{w.speedup:.2f}x" + ("" if measure else " (not re-measured here)"))
    return ok


def _reuse_refusal(r: dict[str, Any], measure: bool, winner: bool) -> str | None:
    """Why a db entry is not reused, or None."""
    if r.get("status") not in ("ok", "build_only") or not (r.get("correct") or r.get("status") == "build_only"):
        return f"failed re-verification ({r.get('failure')})"
    if measure and not winner:
        return f"not faster than the default on re-measure ({r.get('speedup') or 0:.3g}x)"
    return None


def _remeasure(r: dict[str, Any]) -> dict[str, Any]:
    return {"speedup": r.get("speedup"), "baseline": r.get("baseline"), "spread": r.get("spread"),
            "baseline_spread": r.get("baseline_spread"), "rounds": r.get("rounds")}


def _build_and_write(opts: OptimizeOptions, loaded: LoadedModel, profs: list[KernelProfile],
                     decisions: dict[str, Winner], preset: Any, run_id: str, out: Path, budget: tuple[Any, str],
                     view: OptimizeView, clock: WholeRun) -> dict[str, Any]:
    """The model built with the winners (fallback.settle drops any that break it), verified, written to OUT;
    budget: the whole Budget and how it ended."""
    from .fallback import settle
    from .manifest import build_manifest
    from .verify import input_sets, ort_outputs

    by_kernel = {p.spec.key: {name: w.source for name in p.spec.names} for p in profs
                 if (w := decisions.get(p.spec.key)) and w.source}
    view.say(f"building the model for {preset.name} with {len(by_kernel)} tuned kernel(s) ...")
    sets = input_sets(loaded, opts.verify_sets)
    expected = ort_outputs(loaded, sets, _threads(preset))
    whole, note = budget
    with staging(out) as tmp:
        def attempt(keys: list[str], final: bool) -> tuple[dict[str, Any], dict[str, Any]]:
            replace_by = {name: src for k in keys for name, src in by_kernel[k].items()}
            return _build_and_check(opts, loaded, preset, replace_by, sets, expected, tmp, clock, final)

        settled = settle(attempt, list(by_kernel))
        for key, why in settled.dropped.items():
            view.say(f"dropped kernel {key[:12]}: the model's build failed with its winner ({why[:160]})")
        result, verification = settled.value
        withheld = slower_than_default(result.get("latency"), preset) if by_kernel else None
        if withheld:  # what ships is never slower than the default build: that build, verified and timed
            view.say(f"{withheld}: writing the default build instead")
            result, verification = attempt([], True)
        shutil.rmtree(tmp / REFS_DIR, ignore_errors=True)  # the comparison builds do not ship
        _write_check(tmp, loaded, sets, expected)
        manifest = build_manifest(opts, loaded, profs, decisions, preset, run_id, whole, result, verification, clock.t0,
                                  note)
        manifest["dropped"] = [{"kernel": p.spec.names[0], "key": p.spec.key, "why": settled.dropped[p.spec.key]}
                               for p in profs if p.spec.key in settled.dropped]
        manifest["withheld"] = withheld
        for k in manifest["kernels"]:
            if k["key"] in settled.dropped:
                k["decision"] = "dropped: the model's build failed with its winner (default kept)"
            elif withheld and k["key"] in by_kernel:
                k["decision"] = "winner withheld: the model with the winners was slower than its default build"
        manifest["outputs"] = [{"name": n, "shape": list(e.shape), "dtype": str(e.dtype)}
                               for n, e in zip(loaded.outputs, expected[0])]
        manifest["digests"] = file_digests(tmp)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str))
        from .report import html_page, markdown

        (tmp / "report.md").write_text(markdown(manifest))
        (tmp / "report.html").write_text(html_page(manifest))
    return manifest


def _build_and_check(opts: OptimizeOptions, loaded: LoadedModel, preset: Any, replace_by: dict[str, str],
                     sets: list[list[np.ndarray]], expected: list[list[np.ndarray]], tmp: Path, clock: WholeRun,
                     timed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """One build with these winners, its outputs checked against ONNX Runtime's (raises BuildFailedError or
    VerificationError); timed: the end-to-end comparison too (the build that is kept)."""
    from .verify import check

    result, got = _run_build_job(opts, loaded, preset, replace_by, sets, tmp, clock, timed)
    if got is None:
        return result, {"status": "not run", "why": "(build-only target: run `leka run OUT --check` on the device)"}
    return result, {"status": "passed", **check(loaded, expected, got)}


def slower_than_default(latency: dict[str, Any] | None, preset: Any) -> str | None:
    """The whole model timed against its default build (when timed, --time > 0): why the build with the winners
    does not ship (slower than the default beyond noise in every round), or None. The kernels' winners won
    one by one, alone; in the model a parallel kernel after a long serial one wakes sleeping threads (kws-gru:
    0.025 ms with its winners against 0.020 without), and the model is what ships."""
    from .remote import baseline_for
    from .timing_verdict import round_ratios
    from .tune import noise_floor

    default = baseline_for(preset)
    if not latency or "optimized" not in latency or default not in latency:
        return None
    opt, base = latency["optimized"], latency[default]
    floor = noise_floor({"rounds": min(opt["rounds"], base["rounds"]), "spread": opt["iqr_rel"],
                         "baseline_spread": base["iqr_rel"]})
    if opt["median_ms"] > base["median_ms"] * floor and max(round_ratios(opt, base)) < 1.0:  # slower every round
        return (f"the build with the winners was slower than the default build ({default}) beyond noise: "
                f"{opt['median_ms']:.4g} ms vs {base['median_ms']:.4g} ms (more than {floor:.3g}x)")
    return None


def _threads(preset: Any) -> int:
    env = os.environ.get("TVM_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return int((preset.facts or {}).get("cores") or preset.target.get("num-cores") or os.cpu_count() or 1)


def _job_process(job: Path, timeout: float | None) -> tuple[int | None, str]:
    """Runs the build job in a process group of its own: its exit code and stderr, or (None, "") when it outlasted
    `timeout` (the group killed: the job's comparison builds compile in child processes, which must not
    outlive it into the writing of OUT)."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "leka.optimize.build_job", str(job)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _out, err = proc.communicate(timeout=timeout)
        return proc.returncode, err
    except subprocess.TimeoutExpired:
        return None, ""
    finally:
        if proc.poll() is None:  # timed out, or interrupted (the group does not get the terminal's Ctrl-C)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _margin(left: float) -> float:
    return max(DEADLINE_MARGIN_S, 0.05 * left)


def _run_build_job(opts: OptimizeOptions, loaded: LoadedModel, preset: Any, replace: dict[str, str],
                   sets: list[list[np.ndarray]], tmp: Path, clock: WholeRun,
                   timed: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray] | None]:
    work = tmp / ".build"
    shutil.rmtree(work, ignore_errors=True)  # a failed try before this one (fallback.settle) left its own
    work.mkdir()
    runnable = preset.runnable and preset.family == "cpu"
    np.savez(work / "inputs.npz", allow_pickle=False, **{f"{s}:{i.name}": x for s, xs in enumerate(sets)
                                                         for i, x in zip(loaded.inputs, xs)})
    job = {"model": str(Path(loaded.path).resolve()), "shapes": opts.shapes,
           "target": preset.target if preset.name == "custom" else preset.name, "replace": replace,
           "export": str(tmp / LIBRARY), "inputs": str(work / "inputs.npz") if runnable else None,
           "outputs": str(work / "outputs.npz"), "input_names": [i.name for i in loaded.inputs],
           "n_sets": len(sets), "threads": _threads(preset), "time": timed and opts.time_s > 0, "min_time_s": opts.time_s,
           "result": str(work / "result.json"), "refs_dir": str(tmp / REFS_DIR)}
    left = clock.left_s()
    if left is not None:  # the timing starts no round past it; the margin is for checking and writing OUT
        job["deadline"] = time.time() + left - _margin(left)
    (work / "job.json").write_text(json.dumps(job))
    rc, stderr = _job_process(work / "job.json", None if left is None else max(left - _margin(left) / 2, 1.0))
    if rc is None:
        # stopped while timing (a first round or one call of a slow default build can outlast the job's deadline:
        # light_vgg19): the build is kept, untimed, with the job's note (its outputs are checked as any build's);
        # stopped before that, nothing to keep
        if not (work / "result.json").exists() or (runnable and not (work / "outputs.npz").exists()):
            raise clock.over("building the model")
    elif rc != 0:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        raise BuildFailedError(f"building the optimised model failed: "
                               f"{lines[-1][:300] if lines else f'exit {rc}'}")
    result = json.loads((work / "result.json").read_text())
    got = dict(np.load(work / "outputs.npz")) if runnable else None
    shutil.rmtree(work)
    return result, got


def _write_check(tmp: Path, loaded: LoadedModel, sets: list[list[np.ndarray]],
                 expected: list[list[np.ndarray]]) -> None:
    """check/: the first input set and ONNX Runtime's outputs for it (`leka run OUT --check` on a device)."""
    (tmp / "check").mkdir()
    np.savez(tmp / CHECK_INPUTS, allow_pickle=False, **{i.name: x for i, x in zip(loaded.inputs, sets[0])})
    np.savez(tmp / CHECK_EXPECTED, allow_pickle=False, **dict(zip(loaded.outputs, expected[0])))
