"""`leka bench run`: a method on workloads (a new run, or --resume of a stored one), each sample stored as
it finishes; its progress (leka.executors.progress.FanoutProgress, as `experiment run` and the executors
show it) and the closing summary line."""
from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class _RunSpec:
    """What a run is made with: from the command line, or from the stored config on --resume."""
    run_id: str | None
    tasks: list[Any]
    method: str
    target_spec: str
    samples: int
    options: dict[str, Any]
    budget: str
    trials: int
    measure: bool
    rpc: Any
    cfg: dict[str, Any] = field(default_factory=dict)  # the stored config (filled in when the run is created)
    selection: Any = None


def cmd_run(args) -> int:
    from leka.bench.store import ResultStore
    from leka.budget import Budget
    from leka.errors import ExitCode
    from leka.methods import get_method, list_methods
    from leka.targets import get_target

    if args.method == "list":
        print("\n".join(list_methods()))
        return 0
    store = ResultStore(args.store)
    spec = _resume_spec(store, args) if args.resume else _new_spec(args)
    budget = Budget.parse(spec.budget)
    method = get_method(spec.method, spec.options)
    target = get_target(spec.target_spec)
    if spec.rpc:  # before the run exists: an unreachable farm is one line, not a run left "started"
        from leka.runners.rpc import check_farm

        check_farm(spec.rpc)
    if spec.run_id is None:
        spec.run_id = _create_run(store, args, spec, target)
    run_id = spec.run_id
    print(f"run {run_id}: {spec.method} on {target.name}, {len(spec.tasks)} workloads x {spec.samples} samples "
          f"(store {store.path})", file=sys.stderr, flush=True)
    out = _execute(args, store, spec, method, target, budget)
    _print_summary(store, run_id, out, spec.options)
    if args.json:
        from leka.bench import metrics

        from .grammar import print_json

        recs = store.samples(run_id)
        print_json({"run_id": run_id, "method": spec.method, "target": target.name, "new_samples": out.done,
                    "already_done": out.skipped_finished, "wall_s": out.wall_s, "stopped": out.stopped,
                    "pending": out.pending, "summary": metrics.summarize(recs).to_json()})
    else:
        print(run_id)
    return ExitCode.BUDGET if out.stopped else ExitCode.OK


def _command_options(args) -> dict[str, Any]:
    """--option KEY=VALUE items, with --llm/--base-url as the llm/base_url options they stand for."""
    from leka.errors import LekaError

    options = _parse_options(args.option)
    for key, value in (("llm", args.llm), ("base_url", args.base_url)):
        if value:
            if options.get(key) not in (None, value):
                raise LekaError(f"--{key.replace('_', '-')} and --option {key}= disagree; give one")
            options[key] = value
    return options


def _resume_spec(store: Any, args) -> _RunSpec:
    from leka.resume_guard import refuse_widening, resolved_paths
    from leka.tasks import get_task, load_task_folder

    run = store.get_run(_resume_ref(store, args.resume))
    cfg = run["config"]
    given = _command_options(args)
    stored = cfg.get("options") if isinstance(cfg.get("options"), dict) else {}
    refuse_widening(run["run_id"], [("--tasks", cfg.get("task_paths"), args.tasks)]
                    + [(f"--option {k}", stored.get(k), given.get(k)) for k in ("llm", "base_url")])
    for p in resolved_paths(args.tasks):  # the command line's folders, equal to the stored ones
        load_task_folder(p)
    spec = _RunSpec(run["run_id"], [get_task(i) for i in cfg["task_ids"]], run["method"], cfg["target_spec"],
                    cfg["samples"], cfg["options"], cfg["budget"], cfg["trials"], cfg["measure"], cfg.get("rpc"),
                    cfg)
    store.add_event(spec.run_id, "resumed", {"finished": len(store.finished_keys(spec.run_id))})
    return spec


def _resume_ref(store: Any, resume: Any) -> str:
    """--resume RUN as given; a bare --resume: the newest run of the store that has not finished."""
    from .grammar import LATEST, latest_unfinished

    if resume is not LATEST:
        return resume
    runs = [{"run_id": r["run_id"], "status": store.get_run(r["run_id"])["status"]}
            for r in reversed(store.list_runs())]
    return latest_unfinished(runs, {"finished"}, "bench run")


def _new_spec(args) -> _RunSpec:
    from leka.errors import LekaError

    from .bench_cmd import _select  # bench_cmd imports this module: a late import, no cycle at load time

    if args.samples < 1 or args.trials < 1:
        raise LekaError("--samples and --trials must be >= 1")
    sel, tasks = _select(args)
    if not tasks:
        raise LekaError("no workload matches the filters (see `leka bench list`)")
    options = _command_options(args)
    if args.remote is not None:  # few rounds by default: each step is one round on the remote host
        from leka.remote.loop import REMOTE_K, REMOTE_STEPS

        options = {"max_steps": REMOTE_STEPS, "k": REMOTE_K, **options,
                   "remote_store": _remote_store(args, args.method)}
    return _RunSpec(None, tasks, args.method, args.target, args.samples, options, args.budget, args.trials,
                    not args.no_measure, args.rpc, selection=sel)


def _create_run(store: Any, args, spec: _RunSpec, target: Any) -> str:
    from leka.evaluator import versions
    from leka.resume_guard import resolved_paths

    spec.cfg = {"selection": spec.selection.to_json(), "task_ids": [t.id for t in spec.tasks],
                "task_paths": resolved_paths(args.tasks), "target_spec": spec.target_spec, "target": target.to_json(),
                "samples": spec.samples, "options": spec.options, "budget": spec.budget, "trials": spec.trials,
                "measure": spec.measure, "argv": sys.argv[1:]}
    if spec.rpc:
        spec.cfg["rpc"] = spec.rpc
    return store.create_run(spec.method, target.name, spec.cfg, versions())


def _execute(args, store: Any, spec: _RunSpec, method: Any, target: Any, budget: Any) -> Any:
    """Run the missing samples here or on an executor; the RunOutcome."""
    from leka.bench.runner import run_benchmark
    from leka.evaluator import EvalConfig
    from leka.executors.base import evaluator_for
    from leka.executors.progress import FanoutProgress

    assert spec.run_id is not None  # cmd_run creates the run before executing it
    run_id, tasks, samples, options = spec.run_id, spec.tasks, spec.samples, spec.options
    finished = store.finished_keys(run_id)
    todo = sum(1 for t in tasks for i in range(samples) if (t.id, spec.method, i) not in finished)
    if args.executor != "local" and todo:
        from leka.executors.cli import run_on_executor

        return run_on_executor(args, store, run_id, tasks, method, samples, options, {**spec.cfg, "rpc": spec.rpc})
    # A finished run needs no evaluator worker (starting one costs a TVM import).
    ev = (evaluator_for(target, EvalConfig(trials=spec.trials, measure=spec.measure), spec.rpc)
          if todo and not options.get("remote_store") else contextlib.nullcontext())
    with ev as evaluator, FanoutProgress(len(tasks) * samples, len(finished), args.quiet or not todo) as prog:
        return run_benchmark(store, run_id, tasks, target, method, samples, evaluator, budget, options,
                             on_outcome=prog.update, on_event=prog.event)


def _print_summary(store: Any, run_id: str, out: Any, options: dict[str, Any]) -> None:
    from leka.bench import metrics
    from leka.executors.cli import print_where

    recs = store.samples(run_id)
    s = metrics.summarize(recs)
    line = (f"run {run_id}: {out.done} new samples ({out.skipped_finished} already done) in {out.wall_s:.1f} s; "
            f"{s.samples} stored: compile {_pct(s.compile_rate)}, Correct@1 {_pct(s.correct_at_1)}, "
            f"Fast@1.0 vs {s.baseline or '—'} {_pct(s.fast_at.get('Fast@1.0'))}, geomean speedup "
            + (f"{s.geomean_speedup:.2f}x" if s.geomean_speedup is not None else "—"))
    print(line, file=sys.stderr)
    if out.not_applicable:
        print(f"  not applicable to {len(out.not_applicable)} workloads: "
              f"{next(iter(out.not_applicable.values()))} ...", file=sys.stderr)
    print_where(recs)
    if out.stopped:
        print(f"  stopped early ({out.stopped}); continue with --resume {run_id}", file=sys.stderr)
    if out.pending:
        _remote_next(out.pending, options["remote_store"], run_id)


def _parse_options(items: list[str]) -> dict:
    from leka.errors import LekaError

    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise LekaError(f"--option {it!r}: expected KEY=VALUE")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def _remote_store(args, method: str) -> str:
    from leka.errors import LekaError
    from leka.remote.pending import default_pending_path

    if method != "leka":
        raise LekaError(f"--remote is for --method leka (its attempts pause on remote measurements), not {method}")
    if args.executor != "local" or args.rpc:
        raise LekaError("--remote measures in rounds of job folders: not with --executor or --rpc")
    return str(Path(args.remote or default_pending_path()).resolve())


def _remote_next(pending: int, store: str, run_id: str) -> None:
    print(f"  {pending} attempt(s) wait for the remote host; each round:\n"
          f"    leka remote --store {store} batch -o jobs\n"
          "    (GPU host) python3 -m leka.remote.multi --jobs 8 jobs/round-N/*/\n"
          f"    leka remote --store {store} ingest jobs/round-N\n"
          f"    leka bench run --resume {run_id}", file=sys.stderr)


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"
