"""`leka tune TASK_ID`: optimise one task with LEKA (the layered agent) and print the final record."""
from __future__ import annotations

import json
import sys

from .grammar import LATEST, add_json, add_llm, add_out, add_resume, latest_unfinished


def register(sub) -> None:
    p = sub.add_parser(
        "tune", help="optimise one task with the LEKA agent (algorithm -> schedule -> memory layers)",
        description="Run LEKA on TASK_ID: per layer, k proposals are validated, compiled, verified and timed in "
                    "isolated workers; the graph retries, advances, backtracks or stops by the results and the "
                    "budget; the best verified candidate is re-measured against tvm-naive in a fresh worker. "
                    "Without --llm the embedded offline proposer runs (no model, no network).",
        epilog="Runs are checkpointed in .leka/ (or $LEKA_HOME): after a kill, `leka tune --resume RUN` continues "
               "from the last completed step. `leka trace RUN` shows the optimisation path.")
    p.add_argument("task", nargs="?", help="task id (omit with --resume)")
    p.add_argument("--target", default="host-cpu", help="preset name or TVM target dict as JSON (default host-cpu)")
    add_llm(p)
    p.add_argument("--budget", help="limits, e.g. calls=20,tokens=200000,usd=2,compiles=200,measurements=64,minutes=10")
    p.add_argument("-k", type=int, default=2, help="proposals per step (default 2)")
    p.add_argument("--plateau", type=float, default=3.0, metavar="PCT",
                   help="a step gaining less than PCT %% is a stall (default 3)")
    p.add_argument("--plateau-steps", type=int, default=2, help="stalls in a row before advancing (default 2)")
    p.add_argument("--max-retries", type=int, default=2, help="failing steps in a row before a layer is given up")
    p.add_argument("--max-steps", type=int, default=24, help="hard cap on steps (default 24)")
    p.add_argument("--no-control", action="store_true",
                   help="build the schedule layer on an accepted algorithm rewrite only (by default its first "
                        "step also schedules the task's own algorithm, one of k proposals)")
    p.add_argument("--layers", default="algorithm+schedule+memory",
                   help="layers walked, joined by '+' (ablation: e.g. schedule, algorithm+schedule)")
    p.add_argument("--no-feedback", action="store_true",
                   help="show the proposer no history of earlier attempts (ablation)")
    p.add_argument("--trials", type=int, default=5, help="correctness trials per candidate (default 5)")
    p.add_argument("--step-limit", type=float, metavar="S",
                   help="cut a step off after S seconds, recorded, and go on (default: a quarter of the task "
                        "limit, 30-120 s)")
    p.add_argument("--task-limit", type=float, metavar="S",
                   help="wall-clock bound of the whole run, finalize included (default: the budget's minutes "
                        "+ 60 s, else 1800 s)")
    p.add_argument("--tasks", action="append", default=[], metavar="PATH", help="extra user task file/folder")
    add_resume(p, "a LEKA run, from its last checkpoint; give --tasks, --llm and --base-url again as at its "
                  "start: they are never read from the store")
    add_out(p, "write the best kernel to PATH as TVMScript with its `# leka:` header (`leka eval PATH` re-checks "
               "it)", "--output")
    p.add_argument("--export-lib", metavar="FILE", help="build the best kernel for the target into a library (.so)")
    add_json(p, "the final record")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--rpc", metavar="HOST:PORT:KEY",
                   help="measure on a remote device through a TVM RPC tracker (docs/targets.md)")
    p.set_defaults(func=run)


def _options(args):
    from leka.agent.session import TuneOptions
    from leka.agent.state import Policy
    from leka.errors import LekaError
    from leka.resume_guard import resolved_paths

    if not args.task:
        raise LekaError("give a TASK_ID, or --resume RUN")
    for name, value, low in (("-k", args.k, 1), ("--plateau-steps", args.plateau_steps, 1),
                             ("--max-retries", args.max_retries, 0), ("--max-steps", args.max_steps, 1),
                             ("--trials", args.trials, 1)):
        if value < low:
            raise LekaError(f"{name} must be >= {low}")
    if args.plateau < 0:
        raise LekaError("--plateau must be >= 0")
    for name, value in (("--step-limit", args.step_limit), ("--task-limit", args.task_limit)):
        if value is not None and not value > 0:
            raise LekaError(f"{name} must be > 0 seconds")
    policy = Policy(k=args.k, plateau_pct=args.plateau, plateau_steps=args.plateau_steps,
                    max_retries=args.max_retries, max_steps=args.max_steps, control=not args.no_control,
                    layers=args.layers, **({"history_len": 0} if args.no_feedback else {}))
    return TuneOptions(task_id=args.task, target=args.target, llm=args.llm, base_url=args.base_url,
                       budget=args.budget, policy=policy, trials=args.trials, tasks_paths=resolved_paths(args.tasks),
                       step_limit_s=args.step_limit, task_limit_s=args.task_limit, rpc=args.rpc)


def run(args) -> int:
    from leka.agent.progress import LineProgress, LiveProgress, NoProgress
    from leka.agent.session import tune
    from leka.budget import Budget
    from leka.errors import LekaError

    if args.resume and args.task:
        raise LekaError("--resume RUN continues a run with its own task and options; drop TASK_ID")
    opts = None if args.resume else _options(args)
    if opts is not None:
        Budget.parse(opts.budget)  # a bad --budget fails before anything starts
        _refuse_graph(opts)

    def progress(title: str):
        if args.quiet:
            return NoProgress()
        return LiveProgress(title) if sys.stderr.isatty() and not args.json else LineProgress(title)

    def on_start(run_id: str, label: str) -> None:
        print(f"leka tune: run {run_id}, proposer {label}", file=sys.stderr, flush=True)

    given = {"tasks_paths": args.tasks, "llm": args.llm, "base_url": args.base_url}
    final = tune(opts, resume=_resume_id(args.resume), progress=progress, on_start=on_start, given=given)
    if args.json:
        out = {k: v for k, v in final.items() if k not in ("best_ir", "eval")}
        print(json.dumps(out, indent=2, default=str))
    else:
        _print_human(final)
    if args.out or args.export_lib:
        _take_away(final, args.out, args.export_lib)
    return 0 if final.get("correct") else 1


def _resume_id(resume):
    """--resume RUN as given; a bare --resume: the newest run of this store that `leka tune` can continue."""
    if resume is not LATEST:
        return resume
    from leka.agent.trace import TraceStore

    runs = [r for r in TraceStore().list_runs() if not (r.get("options") or {}).get("bench_run")]
    return latest_unfinished(runs, {"done"}, "LEKA run")


def _refuse_graph(opts) -> None:
    """A graph task is tuned per fused kernel by `leka optimize`, which reads an ONNX file: write the task's
    model where the user can pass it on, and say the command."""
    from leka.agent.session import graph_refusal
    from leka.errors import LekaError
    from leka.storage import leka_home
    from leka.tasks import all_tasks, get_task

    all_tasks(opts.tasks_paths)
    task = get_task(opts.task_id)
    why = graph_refusal(task)
    if not why:
        return
    if task.onnx_model is None:
        raise LekaError(why)
    path = leka_home() / "models" / f"{task.id}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(task.onnx_model().SerializeToString())
    raise LekaError(f"{task.id} is a graph task: tune it per fused kernel with `leka optimize {path} --target "
                    f"{opts.target}` (its ONNX model was written there)")


def _take_away(final: dict, script_path: str | None, lib_path: str | None) -> None:
    """-o / --export-lib: the verified best kernel as a candidate file and/or a library for its target."""
    from leka.agent.trace import TraceStore
    from leka.errors import LekaError
    from leka.kernel_export import export_library, ir_script, write_kernel
    from leka.targets import get_target
    from leka.tasks import all_tasks, get_task

    if not final.get("correct") or not final.get("best_ir"):
        raise LekaError("no kernel written: the best candidate was not verified in the fresh worker")
    opts = TraceStore().get_run(final["run_id"])["options"].get("tune") or {}
    if opts.get("tasks_paths"):
        all_tasks(opts["tasks_paths"])
    spec = opts.get("target") or final["target"]
    target = get_target(spec)
    source = ir_script(final["best_ir"], get_task(final["task"]), target)
    note = (f"tuned by leka run {final['run_id']}: {final.get('speedup') or 0:.2f}x vs {final.get('baseline')} "
            f"(fresh worker)")
    if script_path:
        print(f"wrote {write_kernel(script_path, source, final['task'], spec, note)}", file=sys.stderr)
    if lib_path:
        built = export_library(source, target.target if target.name == "custom" else spec, lib_path)
        print(f"wrote {built['path']} (built in {built['compile_s']:.2f} s)"
              + "".join(f"; {n}" for n in built.get("notes", [])), file=sys.stderr)


def _print_human(f: dict) -> None:
    print(f"run {f['run_id']}  task {f['task']}  target {f['target']}  proposer {f.get('proposer_label')}")
    print(best_line(f))
    for rej in f.get("rejected") or []:  # finalists a fresh re-measure did not confirm (leka.agent.finalize)
        print(f"finalize rejected the {rej['what']} (step {rej.get('step')}): {rej['reason']}")
    if f.get("fallback"):
        print(f"reported instead: the {f['fallback']}")
    contrib = _kernel_layers(f)
    print("layers (in the final kernel, search timings): " + "  ".join(f"{k} {v:.2f}x" for k, v in contrib.items()))
    spent = {k: v for k, v in (f.get("budget_spent") or {}).items() if v}
    compile_s = (f.get("eval") or {}).get("compile_s")
    print(f"steps {f['steps']}, evaluations {f['evaluations']}, stop: {f.get('stop_reason')}, "
          f"budget spent: {', '.join(f'{k}={v:.3g}' for k, v in spent.items()) or '-'}"
          + (f", final kernel compiles in {compile_s:.2f} s" if isinstance(compile_s, (int, float)) else ""))
    print(f"path: leka trace {f['run_id']}")


def _kernel_layers(f: dict) -> dict:
    """Per-layer credit of the decisions the final kernel contains (as `leka trace` shows it)."""
    from leka.agent.trace import TraceStore, decision_irs, kernel_credit

    contrib = f.get("contributions") or {"path": [], "by_layer": {}}
    try:
        store = TraceStore()
        irs = decision_irs(store, f["run_id"], store.steps(f["run_id"]))
    except Exception:  # noqa: BLE001 - a display detail: fall back to the search's own attribution
        return contrib.get("by_layer", {})
    return kernel_credit(contrib, irs, f.get("best_ir"))["by_layer"]


def best_line(f: dict) -> str:
    """The verdict on the final record: a speedup only when it is one beyond measurement noise."""
    from leka.bench.metrics import is_fast

    if not f.get("correct"):
        return f"best: NOT verified in the fresh worker: {f.get('failure')}: {f.get('error')}"
    sp, base = f.get("speedup"), f.get("baseline")
    if f.get("floor"):
        return f"no candidate beat {base}: its own kernel is the answer (the floor; docs/agent.md)"
    if not isinstance(sp, (int, float)):
        return "best: correct (not timed)"
    timing = (f"{f['candidate_ms']:.4g} ms vs {f['baseline_ms']:.4g} ms, re-measured in a fresh worker; "
              f"search saw {f['search_speedup']:.2f}x")
    if not is_fast(f, 1.0):
        return f"no speedup found; the baseline is the answer (best candidate {sp:.2f}x vs {base}: {timing})"
    return f"best: correct, {sp:.2f}x vs {base} ({timing})"
