"""`leka bench list|stats|validate|run|runs|report|compare|export`: EdgeKernelBench from the command line
(running: bench_run_cmd; reading a store: bench_results_cmd)."""
from __future__ import annotations

import json
from collections import Counter

from .bench_results_cmd import cmd_compare, cmd_export, cmd_report, cmd_runs
from .bench_run_cmd import cmd_run
from leka.executors.cli import add_executor_flags

from .grammar import add_json, add_llm, add_out, add_resume
from .tables import add_output_flags


def _filters(p, limit: bool = True) -> None:
    p.add_argument("--tasks", action="append", default=[], metavar="PATH", help="extra user task file/folder")
    p.add_argument("--level", type=int, help="1 (operators), 2 (fused patterns) or 3 (graphs)")
    p.add_argument("--domain", help="e.g. vision, speech-audio, nlp (see `leka bench stats`)")
    p.add_argument("--pattern", help="only this pattern")
    p.add_argument("--task", dest="ids", action="append", default=[], metavar="ID", help="only this task (repeatable)")
    p.add_argument("--split", help="only the agent-evaluation split dev or test (v1:test; benchmark/splits/), "
                                   "in split order")
    if limit:
        p.add_argument("--limit", type=int,
                       help="at most N workloads, spread over domains and patterns (deterministic)")


def register(sub) -> None:
    p = sub.add_parser("bench", help="EdgeKernelBench: list/stats/validate workloads, run methods, report results",
                       description="EdgeKernelBench harness. Results go to an append-only SQLite store "
                                   "(.leka/results.sqlite; LEKA_HOME overrides .leka, --store a file).")
    bsub = p.add_subparsers(dest="bench_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    _add_workload_parsers(bsub)
    _add_run_parser(bsub)
    _add_result_parsers(bsub)


def _add_workload_parsers(bsub) -> None:
    """list, stats, validate: the workloads themselves."""
    q = bsub.add_parser("list", help="list workloads")
    _filters(q)
    q.add_argument("--json", action="store_true", help="JSON list: id, pattern, level, domain, dtype, flops, bytes ...")
    add_output_flags(q)
    q.set_defaults(func=cmd_list)

    q = bsub.add_parser("stats", help="counts of patterns and workloads by domain, level and dtype")
    _filters(q, limit=False)
    q.add_argument("--json", action="store_true")
    add_output_flags(q)
    q.set_defaults(func=cmd_stats)

    q = bsub.add_parser("validate", help="build each definition with TVM's default lowering and check it against "
                                         "its reference (no timing); exit 1 if any fails")
    _filters(q)
    q.add_argument("--target", default="host-cpu", help="preset name or TVM target dict as JSON (default host-cpu)")
    q.add_argument("--trials", type=int, default=3, help="correctness trials per workload (default 3)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_validate)


def _add_run_parser(bsub) -> None:
    q = bsub.add_parser("run", help="run a method on workloads; every sample is stored as it finishes")
    _filters(q)
    q.add_argument("--method", default="tvm-naive", help="method name (see `--method list`; default tvm-naive)")
    q.add_argument("--target", default="host-cpu", help="preset name or TVM target dict as JSON (default host-cpu)")
    q.add_argument("--samples", type=int, default=1,
                   help="independent attempts per workload, n for Correct@k (default 1)")
    q.add_argument("--budget", default="", help='the whole run\'s limits, shared by every workload, e.g. '
                   '"calls=20,usd=2,compiles=200,minutes=10" (any subset); each attempt\'s own limits: '
                   '--option agent_budget=compiles=64,measurements=64,minutes=5')
    q.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="method option (repeatable)")
    add_llm(q, "the model of a model-driven method (leka, direct, codeloop); the same as --option llm= (and "
               "--base-url as --option base_url=)")
    q.add_argument("--trials", type=int, default=5, help="correctness trials per sample (default 5)")
    q.add_argument("--no-measure", action="store_true", help="correctness only")
    add_resume(q, "a bench run: repeats no finished sample, keeps its settings; its task folders (--tasks) and "
                  "proposer (--llm/--base-url) are given again as at the start, never read from the store")
    add_json(q, "the run's summary (metrics, samples, where they ran)")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    q.add_argument("--quiet", action="store_true",
                   help="no progress display (a live table of samples per node on a terminal, a line per sample "
                        "otherwise)")
    q.add_argument("--remote", nargs="?", const="", metavar="STORE",
                   help="--method leka measured on a host reachable only by files (a GPU box): attempts pause on "
                        "their measurements; `leka remote batch/ingest` carry each round, `--resume RUN` goes on. "
                        "STORE: the pending-measurement store (default `leka remote`'s)")
    add_executor_flags(q)
    q.set_defaults(func=cmd_run)


def _add_result_parsers(bsub) -> None:
    """runs, report, compare, export: reading the store."""
    q = bsub.add_parser("runs", help="list the runs in the store (id, method, target, status, samples)")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    q.add_argument("--json", action="store_true")
    add_output_flags(q)
    q.set_defaults(func=cmd_runs)

    q = bsub.add_parser("report", help="Markdown + self-contained HTML report of a run, or of runs side by side")
    q.add_argument("run", nargs="+", help="run id (a unique prefix is enough); several: a side-by-side comparison")
    add_out(q, "output folder (default .leka/reports/RUN, or .leka/reports/compare-A-vs-B)")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    add_json(q, "the report's data and the files written")
    q.set_defaults(func=cmd_report)

    q = bsub.add_parser("compare", help="runs side by side in the terminal (summary and per task)")
    q.add_argument("run", nargs="+", help="two or more run ids (unique prefixes are enough)")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    add_json(q, "the comparison (summary and per-task rows)")
    add_output_flags(q)
    q.set_defaults(func=cmd_compare)

    q = bsub.add_parser("export", help="export a run's samples as JSONL or CSV, or its kernels as TVMScript files")
    q.add_argument("run", help="run id (a unique prefix is enough)")
    q.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    add_out(q, "file (default: stdout)")
    q.add_argument("--scripts", metavar="DIR", help="instead: write each sample's final kernel as DIR/TASK.N.py "
                                                    "with its `# leka:` header (`leka eval` re-checks it)")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    add_json(q, "a summary of what was written (without -o/--scripts: the samples as one JSON list)")
    q.set_defaults(func=cmd_export)


def _select(args):
    from leka.bench.runner import Selection, select_tasks

    sel = Selection(level=args.level, domain=args.domain, pattern=args.pattern, ids=args.ids,
                    limit=getattr(args, "limit", None))
    if args.split:
        from leka.bench.splits import split_tasks

        select_tasks(Selection(), args.tasks)  # loads user task folders and checks nothing else
        tasks = split_tasks(args.split, level=args.level, domain=args.domain, pattern=args.pattern, limit=sel.limit)
        return sel, [t for t in tasks if not args.ids or t.id in args.ids]
    return sel, select_tasks(sel, args.tasks)


def cmd_list(args) -> int:
    _, tasks = _select(args)
    if args.json:
        print(json.dumps([t.summary() for t in tasks], indent=1))
        return 0
    from .tables import Col, output_mode, render

    cols = [Col("id", "id"), Col("L", "num"), Col("domain", "desc"), Col("dtype", "id", optional=True),
            Col("MFLOP", "num", optional=True), Col("KB", "num", optional=True), Col("pattern", "desc", optional=True),
            Col("description", "desc", optional=True)]
    rows = [[k.id, str(k.level), k.domain, k.dtype, f"{k.flops / 1e6:.2f}", f"{k.bytes / 1e3:.1f}", k.pattern,
             k.description] for k in tasks]
    render(f"EdgeKernelBench workloads ({len(tasks)})", cols, rows, output_mode(args))
    return 0


def stats_of(tasks) -> dict:
    return {"patterns": len({t.pattern for t in tasks}), "workloads": len(tasks),
            "domains": dict(sorted(Counter(t.domain for t in tasks).items())),
            "levels": {str(k): v for k, v in sorted(Counter(t.level for t in tasks).items())},
            "dtypes": dict(sorted(Counter(t.dtype for t in tasks).items())),
            "patterns_by_level": {str(lv): len({t.pattern for t in tasks if t.level == lv})
                                  for lv in sorted({t.level for t in tasks})}}


def cmd_stats(args) -> int:
    _, tasks = _select(args)
    s = stats_of(tasks)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    from .tables import Col, output_mode, render

    mode = output_mode(args)
    print(f"{s['workloads']} workloads, {s['patterns']} patterns")
    for key in ("levels", "domains", "dtypes"):
        cols = [Col(key[:-1], "id"), Col("workloads", "num")] + ([Col("patterns", "num")] if key == "levels" else [])
        rows = [[k, str(v), *([str(s["patterns_by_level"][k])] if key == "levels" else [])] for k, v in s[key].items()]
        render(key, cols, rows, mode)
    return 0


def cmd_validate(args) -> int:
    from rich.console import Console

    from leka.bench.validate import validate_tasks
    from leka.errors import LekaError
    from leka.targets import get_target

    if args.trials < 1:
        raise LekaError("--trials must be >= 1")
    _, tasks = _select(args)
    target = get_target(args.target)
    c = Console(stderr=args.json)
    n = len(tasks)

    def show(r: dict) -> None:
        i = len(shown) + 1
        shown.append(r)
        mark = "[green]ok[/]" if r["ok"] else f"[red]{r['failure']}[/]"
        c.print(f"[{i}/{n}] {r['task']:40s} {mark} {r['eval_s']:.1f} s" + (f"  {r['error']}" if r["error"] else ""))

    shown: list[dict] = []
    rep = validate_tasks(tasks, target, trials=args.trials, on_result=show)
    if args.json:
        print(json.dumps(rep.to_json(), indent=1))
    c.print(f"validated {n} workloads on {target.name} in {rep.wall_s:.1f} s: {n - len(rep.failures)} ok, "
            f"{len(rep.failures)} failed")
    for r in rep.failures:
        c.print(f"  FAILED {r['task']}: {r['failure']}: {r['error']}")
    return 1 if rep.failures else 0
