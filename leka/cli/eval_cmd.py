"""`leka eval CANDIDATE`: build, verify and time one candidate file against a named baseline."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser(
        "eval", help="evaluate a candidate TVMScript file (correctness + speedup vs a baseline)",
        description="Build CANDIDATE (a scheduled TVMScript PrimFunc) for a target in an isolated worker, check it "
                    "against the task's NumPy reference on fresh random inputs, and time it against a baseline. "
                    "Task and target default to the file's header line `# leka: task=ID target=PRESET`.",
        epilog="Exit status: 0 correct, 1 the candidate failed (compile_error/runtime_error/timeout/crash/wrong), "
               "2 bad input (not TVMScript, unknown task/target, signature mismatch), 3 built but the target cannot "
               "run here.")
    p.add_argument("candidate", help="TVMScript file")
    p.add_argument("--task", help="task id (default: from the file header)")
    p.add_argument("--target", help="preset name or TVM target dict as JSON (default: from the file header)")
    p.add_argument("--tasks", action="append", default=[], metavar="PATH", help="extra user task file/folder")
    p.add_argument("--baseline", default="tvm-naive", help="tvm-naive (default) or tvm-dlight")
    p.add_argument("--trials", type=int, default=5, help="correctness trials (default 5)")
    p.add_argument("--no-measure", action="store_true", help="check correctness only")
    p.add_argument("--seed", type=int, metavar="N",
                   help="replay the inputs of an earlier evaluation (its record's input_seed; default: a fresh seed)")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.add_argument("--rpc", metavar="HOST:PORT:KEY",
                   help="run and time on a remote device through a TVM RPC tracker (docs/targets.md)")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.candidate import load_candidate
    from leka.errors import CandidateFormatError, ExitCode, LekaError
    from leka.evaluator import EvalConfig
    from leka.targets import get_target
    from leka.tasks import get_task, load_task_folder

    cand = load_candidate(args.candidate)
    for p in args.tasks:
        load_task_folder(p)
    task_id = args.task or cand.task
    if not task_id:
        raise LekaError(f"{args.candidate}: no task given (use --task ID or a `# leka: task=ID` header)")
    target_spec = args.target or cand.target or "host-cpu"
    task, target = get_task(task_id), get_target(target_spec)
    if args.trials < 1:
        raise LekaError("--trials must be >= 1")
    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise LekaError("--seed must be in [0, 2**63)")
    # A verdict, not search feedback: the held-back input families are part of it.
    cfg = EvalConfig(trials=args.trials, measure=not args.no_measure, seed=args.seed, holdout=True)
    from leka.executors.base import evaluator_for

    with evaluator_for(target, cfg, args.rpc) as ev:
        res = ev.evaluate(task, cand.source, baseline=args.baseline)
    if res.failure == "compile_error" and res.stage in ("parse", "signature"):
        raise CandidateFormatError(f"{args.candidate}: {res.error}")
    if args.json:
        print(json.dumps(res.to_json(), indent=2, default=str))
    else:
        _print_human(res, args.candidate)
    if res.status == "build_only":
        return ExitCode.NOT_RUNNABLE
    return ExitCode.OK if res.correct and not res.failure else ExitCode.FAILED


def _print_human(res, path: str) -> None:
    from rich.console import Console

    c = Console()
    head = f"[bold]{path}[/] · task {res.task} · target {res.target}"
    if res.status == "build_only":
        c.print(f"{head}\n  built ({res.source_kind}, {res.compile_s:.2f} s); not run: {res.error}")
        return
    if res.failure:
        c.print(f"{head}\n  [red]{res.failure}[/] at {res.stage}: {res.error} (input seed {res.input_seed})")
        for m in res.mismatches:
            c.print(f"    {m.output}{m.index}: got {m.got}, expected {m.expected}")
        return
    line = f"{head}\n  [green]correct[/] ({res.trials_passed}/{res.trials} trials, input seed {res.input_seed})"
    if res.speedup is not None:
        from leka.bench.metrics import is_fast

        line += (f"; {res.candidate_ms:.4f} ms vs {res.baseline} {res.baseline_ms:.4f} ms → "
                 f"[bold]{res.speedup:.2f}×[/] (spread {res.spread:.1%})"
                 + ("" if is_fast(res.to_json(), 1.0) else "; not faster than the baseline beyond noise"))
    c.print(line + f"; compiled in {res.compile_s:.2f} s" if res.compile_s is not None else line)
