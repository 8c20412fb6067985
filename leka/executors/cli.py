"""The --executor / --ray-address / --rpc plumbing shared by the CLI modules that fan work out (bench run,
optimize, experiment run)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

from .base import EXECUTORS, get_executor
from .fanout import run_fanout
from .progress import FanoutProgress, where_summary


def add_executor_flags(p: Any, rpc_only: bool = False, rpc: bool = True, unit: str = "sample",
                       local: str = "this machine") -> None:
    if not rpc_only:
        p.add_argument("--executor", choices=EXECUTORS, default="local",
                       help=f"where the work runs: local (default: {local}) or ray (one Ray task per {unit}; "
                            "docs/targets.md)")
        p.add_argument("--ray-address", metavar="ADDR",
                       help="join this Ray cluster (default: start a local Ray instance for the run)")
    if rpc:
        p.add_argument("--rpc", metavar="HOST:PORT:KEY",
                       help="run and time on a remote device through a TVM RPC tracker (docs/targets.md)")


def executor_from_args(args: Any) -> Any:
    """The executor the flags name, or None for the command's own local path; --ray-address needs --executor
    ray (a one-line error, not a silently local run)."""
    from leka.errors import LekaError

    if args.ray_address and args.executor != "ray":
        raise LekaError("--ray-address needs --executor ray")
    return None if args.executor == "local" else get_executor(args.executor, address=args.ray_address)


def run_on_executor(args: Any, store: Any, run_id: str, tasks: Sequence[Any], method: Any, samples: int,
                    options: dict[str, Any], cfg: dict[str, Any]) -> Any:
    """A run's missing samples on the executor the flags name, with per-node progress; returns RunOutcome."""
    from leka.errors import LekaError

    try:
        if cfg.get("budget"):
            raise LekaError("--executor ray takes no --budget: a budget is one accountant, and Ray samples run "
                            "apart")
        ex = executor_from_args(args)
    except LekaError as e:  # the run is not left "started"
        store.add_event(run_id, "failed", {"error": str(e)[:500]})
        raise
    total = len(tasks) * samples
    try:
        with FanoutProgress(total, len(store.finished_keys(run_id)), quiet=args.quiet) as prog:
            return run_fanout(store, run_id, tasks, method, samples, ex, options, on_outcome=prog.update,
                              on_event=prog.event,
                              target_spec=cfg["target_spec"], trials=cfg["trials"], measure=cfg["measure"],
                              task_paths=tuple(str(Path(p).resolve()) for p in cfg.get("task_paths") or ()),
                              rpc=cfg.get("rpc"))
    finally:
        ex.close()


def print_where(records: list[dict[str, Any]]) -> None:
    rows = where_summary(records)
    if rows and any(ex != "local" or n != "?" for ex, _node, n, _b in rows):
        print("  where the samples ran: " + "; ".join(f"{node} [{ex}] {n} ({b} failed)" for ex, node, n, b in rows),
              file=sys.stderr)
