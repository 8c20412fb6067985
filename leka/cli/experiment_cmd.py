"""`leka experiment run CONFIG [--resume] [--llm PROVIDER:MODEL --base-url URL] [--executor ray --ray-address
ADDR]`: run a declarative experiment (experiments/configs/*.toml) into the results store and write its tables
and report."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from leka.executors.cli import add_executor_flags

from .grammar import LATEST, add_json, add_llm, add_out, add_resume
from .tables import add_output_flags


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run declarative experiments (methods x options x targets x split x budget)")
    esub = p.add_subparsers(dest="experiment_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
    q = esub.add_parser("run", help="run CONFIG; every sample goes to the store; writes table.md, report.html")
    q.add_argument("config", nargs="?", help="TOML or JSON experiment config (see experiments/configs/)")
    add_resume(q, "", "OUT", "continue a killed experiment (no sample is repeated) and write its report into OUT "
                             "(default: the newest experiments/results/NAME-* folder)")
    add_llm(q, "run the model-driven methods (leka, direct, codeloop) with this model instead of the offline "
               "proposer")
    q.add_argument("--store", help="SQLite file (default .leka/results.sqlite)")
    add_out(q, "report folder (default a fresh experiments/results/NAME-YYYYMMDD-HHMMSS); a folder that already "
               "holds files is refused unless --force (or --resume)")
    add_json(q, "the results (results.json) instead of the arms table")
    add_output_flags(q)
    q.add_argument("--force", action="store_true", help="write the report into an --out folder that holds files "
                                                        "(table.md, report.html, results.json are replaced)")
    add_executor_flags(q, rpc=False, unit="(method, task, sample); all of the table's at once",
                       local="one sample after another here")
    q.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    from leka.bench.store import ResultStore
    from leka.experiment import load_config, run_experiment
    from leka.experiment.report import write_experiment_report
    from leka.llm.factory import RECORD_ENV

    from .grammar import file_before_resume

    file_before_resume(args, "config", "the experiment's TOML or JSON file")
    cfg = load_config(args.config)
    if args.base_url and not args.llm:
        from leka.errors import LekaError

        raise LekaError("--base-url needs --llm PROVIDER:MODEL")
    out = _out_folder(args, cfg.name)
    if not (args.force or args.resume):  # before the run: hours of work must not end in a refusal
        refuse_to_overwrite(out)
    from leka.executors.cli import executor_from_args

    if args.llm and not os.environ.get(RECORD_ENV):  # every real model reply of the run is kept (replayable)
        out.mkdir(parents=True, exist_ok=True)
        os.environ[RECORD_ENV] = str(out / "transcript.jsonl")
    store = ResultStore(args.store)
    executor = executor_from_args(args)
    try:
        result = run_experiment(cfg, store, resume=bool(args.resume), llm=args.llm, base_url=args.base_url,
                                executor=executor)
    finally:
        if executor is not None:
            executor.close()
    paths = write_experiment_report(cfg, store, result, out)
    if args.json:
        print(paths["json"].read_text())
    else:
        _print_arms(json.loads(paths["json"].read_text()), args)
    print(f"wrote {paths['md']}, {paths['html']}, {paths['json']} (store {store.path})", file=sys.stderr)
    return 0


# The arms table on the terminal, through the one table writer (80 columns piped, --wide for all); the
# Markdown and HTML files keep every column and the per-backend/level table.
ARM_KINDS = {"arm": ("id", False), "proposer": ("name", True), "picks by position": ("desc", True),
             "Correct@1": ("num", False), "Fast@1.0": ("num", False), "geomean": ("num", False)}


def _print_arms(report: dict, args) -> None:
    from leka.experiment.arms import ARM_HEAD, arm_cells

    from .tables import Col, output_mode, render

    cols = [Col(name, *ARM_KINDS.get(name, ("num", True))) for name in ARM_HEAD]
    render(report.get("model") or None, cols, [arm_cells(r) for r in report.get("arms", [])], output_mode(args),
           caption="by backend and level, runs, plots: table.md and report.html")


def _out_folder(args, name: str) -> Path:
    """-o PATH; --resume OUT; a bare --resume: the newest results folder of this experiment; else a fresh one."""
    from leka.errors import LekaError

    if args.out and args.resume not in (None, LATEST) and Path(args.out) != Path(args.resume):
        raise LekaError(f"--resume {args.resume} and -o {args.out} name two report folders; give one")
    if args.out or args.resume not in (None, LATEST):
        return Path(args.out or args.resume)
    if args.resume is LATEST:
        old = sorted(Path("experiments/results").glob(f"{name}-*"), key=lambda d: d.stat().st_mtime)
        if old:
            return old[-1]
    return fresh_out(name)


def fresh_out(name: str) -> Path:
    """experiments/results/NAME-YYYYMMDD-HHMMSS: a new folder, so a run never rewrites recorded results."""
    import time

    return Path("experiments") / "results" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def refuse_to_overwrite(out: Path) -> None:
    from leka.errors import LekaError

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LekaError(f"--out {out} already holds results: pass --resume to continue that experiment, --force "
                        "to overwrite its report, or another --out (the default is a fresh folder)")
