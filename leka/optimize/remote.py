"""`leka optimize --remote`: the model's kernels tuned by LEKA runs whose measurements come from a remote host.

No second loop: each kernel without a tuning-db decision becomes a remote-mode run of leka/remote (its Task
rebuilt from the kernel's spec, kept in the pending store, by whichever process batches or resumes it),
linked to the optimize run. The command then returns (RemoteWaiting) and the user drives the rounds:
`leka remote batch -o jobs` (one job folder per kernel: dlight's build and every pending candidate), the GPU
host runs them (`python3 -m leka.remote.multi`), `leka remote ingest jobs/round-N` resumes every run. The
same `leka optimize ... --remote` again (it resumes the waiting optimize run) turns each finished run into a
decision: the final record's candidate, correct on the device and re-checked here, faster than dlight's
build beyond the noise (tune.is_winner), else dlight's kernel stays. `--remote-stop` ends the waiting runs
at once with the best device-verified candidate their search measured (no fresh re-measure).
Every remote decision is recorded in the tuning db, a kept default too: a GPU round is dear, and a
kernel whose run ended is not tuned again (a new --db re-tunes).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable

from leka.remote.loop import REMOTE_STEPS, remote_policy  # noqa: F401 - REMOTE_STEPS: for the CLI and pipeline

from .db import TuningDB, Winner, target_key
from .extract import spec_data
from .profile import KernelProfile
from .tune import is_winner, noise_floor

FACTORY = "leka.optimize.extract:task_from_data"
LAYERS = ("schedule", "memory")  # the GPU gains are in binding and memory; the algorithm layer costs rounds
WAITING = ("pending", "running")


@dataclass
class RemoteWaiting:
    """What `leka optimize --remote` returns while runs wait for the remote host."""

    run_id: str
    store: str
    started: int  # runs started by this call
    waiting: int  # kernels whose runs wait for measurements
    decided: int  # kernels decided (now or earlier)
    open: int  # measurements the next batch will carry


def baseline_for(preset: Any) -> str:
    """What a kernel of the model build is when not replaced: dlight's rules on a GPU, the naive lowering on CPU."""
    return "tvm-naive" if preset.family == "cpu" else "tvm-dlight"


def tune_remote(profs: list[KernelProfile], preset: Any, opts: Any, run_id: str, db: TuningDB,
                on_event: Callable[[str, str, Any], None]) -> tuple[dict[str, Winner], RemoteWaiting | None]:
    """Start, wait on, or settle the remote run of each kernel in `profs` (those without a db decision):
    (new decisions by kernel key, recorded in the db; None when no run waits, else what waits)."""
    from leka.remote.pending import PendingStore

    store = PendingStore(opts.remote_store)
    try:
        if opts.remote_stop and profs:
            _check_something_measured(store, profs, preset)
        links, started, waiting, done = store.linked(run_id), 0, 0, {}
        for p in profs:
            rid = links.get(p.spec.task_id)
            if rid is None:
                rid = _start(store, p, preset, opts)
                store.link(run_id, p.spec.task_id, rid)
                started += 1
            w = _settle(store, rid, p, preset, opts, run_id)
            if w is None:
                waiting += 1
                on_event(p.spec.key, "msg", f"run {rid}: waiting for the remote host")
                continue
            if w.detail.get("unmeasured"):  # stopped before any device result: no decision, re-tuned next time
                p.why_not = "stopped by --remote-stop before the device measured it; the next --remote run tunes it"
                continue
            db.put(w, target_key(preset))
            done[p.spec.key] = w
            on_event(p.spec.key, "done", w)
        if not waiting:
            return done, None
        return done, RemoteWaiting(run_id, str(store.path), started, waiting, len(profs) - waiting,
                                   len(store.open_requests()))
    finally:
        store.close()


def _check_something_measured(store: Any, profs: list[KernelProfile], preset: Any) -> None:
    """--remote-stop with no device result for any kernel would keep every default for nothing: refused."""
    from . import OptimizeError

    if any(store.measured(p.spec.task_id, preset.name, baseline_for(preset)) for p in profs):
        return
    raise OptimizeError(f"--remote-stop: the remote host has measured none of the model's {len(profs)} kernel(s) "
                        f"yet ({len(store.open_requests())} measurement(s) open), so nothing would be kept: run a "
                        "round first (`leka remote batch -o jobs`, `python3 -m leka.remote.multi` on the GPU host, "
                        "`leka remote ingest jobs/round-N`; docs/cuda.md), or build with dlight's kernels now by "
                        "leaving out --remote")


def _start(store: Any, p: KernelProfile, preset: Any, opts: Any) -> str:
    from leka.agent.session import TuneOptions
    from leka.remote import loop

    store.put_task(p.spec.task_id, FACTORY, spec_data(p.spec))
    policy = remote_policy(preset, opts.remote_steps, layers=LAYERS)
    tune = TuneOptions(task_id=p.spec.task_id, target=preset.name, llm=opts.llm, base_url=opts.base_url,
                       policy=policy, baseline=baseline_for(preset))
    return loop.start(store, [tune])[0]


def _settle(store: Any, rid: str, p: KernelProfile, preset: Any, opts: Any, run_id: str) -> Winner | None:
    """The decision of run `rid`, or None while it waits (and is not stopped by --remote-stop)."""
    from leka.agent.trace import TraceStore

    status = store.status(rid)
    if status in WAITING and opts.remote_stop:
        store.set_run(rid, {}, "stopped")
        TraceStore().set_status(rid, "stopped")
        status = "stopped"
    measured = store.measured(p.spec.task_id, preset.name, baseline_for(preset))
    if status == "stopped":
        return _best_so_far(measured, rid, p, run_id) if measured else _winner(p, run_id, rid, None, {},
                                                                              unmeasured=True)
    if status != "done":
        return None
    final = TraceStore().get_run(rid)["final"] or {}
    res = dict(final.get("eval") or {})
    source = None
    if final.get("correct") and is_winner(res):  # the measured text itself (its digest is in the record)
        source = next((s for s, _r in measured
                       if hashlib.sha256(s.encode()).hexdigest()[:16] == final.get("source_hash")), None)
    return _winner(p, run_id, rid, source, res, stop_reason=final.get("stop_reason"),
                   search_speedup=final.get("search_speedup"), steps=final.get("steps"))


def _best_so_far(measured: list[tuple[str, dict[str, Any]]], rid: str, p: KernelProfile, run_id: str) -> Winner:
    """The fastest winner among the kernel's device-verified measurements (--remote-stop), else the default."""
    wins = [(r["speedup"], s, r) for s, r in measured if is_winner(r)]
    correct = [r for _s, r in measured if r.get("correct")]
    why = "stopped early (--remote-stop): the best device-verified candidate of the search, not re-measured"
    if wins:
        _sp, source, res = max(wins, key=lambda t: t[0])
        return _winner(p, run_id, rid, source, res, stop_reason=why)
    res = max(correct, key=lambda r: r.get("speedup") or 0, default={})
    return _winner(p, run_id, rid, None, res, stop_reason=why)


def _winner(p: KernelProfile, run_id: str, rid: str, source: str | None, res: dict[str, Any],
            **extra: Any) -> Winner:
    detail = {"remote": res.get("remote"), "baseline": res.get("baseline"), "correct": res.get("correct"),
              "measured_speedup": res.get("speedup"), "failure": res.get("failure"),
              "error": (res.get("error") or "")[:300], "noise_floor": noise_floor(res) if res else None, **extra}
    return Winner(p.spec.key, p.spec.task_id, source, res.get("speedup") if source else None,
                  res.get("candidate_ms"), res.get("baseline_ms"), "leka", run_id, rid, detail)


def next_steps(w: RemoteWaiting, model_cmd: str, proposer_flags: str = "") -> list[str]:
    """What the user does next, commands exactly as they work (proposer_flags: --llm/--base-url as given,
    which a resume takes from its command line only)."""
    store = f" --store {w.store}" if w.store != _default_store() else ""
    return [f"{w.waiting} kernel run(s) wait for the remote host ({w.open} measurement(s) open, "
            f"{w.decided} kernel(s) decided); optimize run {w.run_id} resumes when they are done:",
            f"  leka remote{store} batch -o jobs          # this round's job folders: jobs/round-N/",
            "  (GPU host, runtime bundle: docs/cuda.md)  python3 -m leka.remote.multi --jobs 8 jobs/round-N/*/",
            f"  leka remote{store} ingest jobs/round-N{proposer_flags}    # results in; the runs resume (repeat batch/ingest "
            "until it opens no measurement)",
            f"  {model_cmd}    # again: builds the artifact with the finished runs' winners "
            "(add --remote-stop to end the waiting runs now)"]


def _default_store() -> str:
    from leka.remote.pending import default_pending_path

    return str(default_pending_path())
