"""`leka remote tune|batch|ingest|status`: LEKA tuning with measurements from a remote host (job folders).

    leka remote tune TASK... --target cuda      # runs start; each pauses on its first measurements
    leka remote batch -o jobs                   # one job folder per task: every pending candidate + baseline
    (remote host: python -m leka.remote.multi jobs/round-N/*  with `leka gpu-bundle`'s runtime-only TVM)
    leka remote ingest jobs                     # results in; every paused run resumes until it pauses again

Each action prints a short table; --json prints the same as JSON.
"""
from __future__ import annotations

import argparse
from typing import Any

from leka.remote.pending import default_pending_path

from .grammar import add_json, add_llm, add_out, print_json
from .tables import Col, add_output_flags, output_mode, render


def register(sub) -> None:
    p = sub.add_parser("remote", help="tune with measurements from a remote host (job folders, one per round)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", default=str(default_pending_path()),
                   help="pending-measurement store (SQLite; default .leka/remote/pending.sqlite, LEKA_HOME overrides .leka)")
    s = p.add_subparsers(dest="remote_cmd", metavar="ACTION", required=True)
    t = s.add_parser("tune", help="start LEKA runs that measure remotely")
    t.add_argument("tasks", nargs="+")
    t.add_argument("--target", required=True)
    t.add_argument("--baseline", choices=("tvm-naive", "tvm-dlight"),
                   help="what candidates are timed against (default: tvm-dlight on a GPU target, the run's floor; "
                        "tvm-naive on CPU)")
    t.add_argument("--budget", help="Budget spec, e.g. measurements=24")
    t.add_argument("--max-steps", type=int, help="step cap of each run: one remote round each, plus one for the "
                   "final re-measure (default 2)")
    add_llm(t)
    b = s.add_parser("batch", help="build every pending measurement into job folders (one round)")
    add_out(b, "folder of the rounds' job folders (round-N/ is added under it)", required=True)
    b.add_argument("--trials", type=int, default=2)
    b.add_argument("--number", type=int, default=20)
    b.add_argument("--rounds", type=int, default=7)
    i = s.add_parser("ingest", help="read a round's results and resume the paused runs")
    i.add_argument("jobs")
    i.add_argument("--no-resume", action="store_true")
    add_llm(i, "the proposer the paused runs were started with")
    i.add_argument("--tasks", action="append", default=[], metavar="PATH",
                   help="user task folders of the paused runs, as they were started with (never read from the store)")
    st = s.add_parser("status", help="runs, rounds and open requests")
    for q in (t, b, i, st):
        add_json(q)
        add_output_flags(q)
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.remote.pending import PendingStore

    store = PendingStore(args.store)
    result = {"tune": _tune, "batch": _batch, "ingest": _ingest, "status": _status}[args.remote_cmd](store, args)
    if args.json:
        print_json(result)
    return 0


def _tune(store: Any, args) -> dict:
    from leka.agent.session import TuneOptions
    from leka.remote import loop

    policy = loop.remote_policy(args.target, args.max_steps or loop.REMOTE_STEPS)
    opts = [TuneOptions(task_id=t, target=args.target, baseline=args.baseline, budget=args.budget, policy=policy,
                        llm=args.llm, base_url=args.base_url) for t in args.tasks]
    started = loop.start(store, opts)
    result = {"runs": started, "open": len(store.open_requests())}
    if not args.json:
        render("remote runs started (each paused on its measurements)", [Col("run", "id"), Col("task", "name")],
               [[rid, o.task_id] for rid, o in zip(started, opts)], output_mode(args),
               caption=f"{result['open']} open measurement(s) in all; next: leka remote batch -o jobs")
    return result


def _batch(store: Any, args) -> dict:
    from leka.remote import rounds

    jobs = [str(j) for j in rounds.batch(store, args.out, trials=args.trials, number=args.number, rounds=args.rounds)]
    if not args.json:
        print(f"{len(jobs)} job folder(s)" + (f" under {jobs[0].rsplit('/', 2)[0]}" if jobs else
                                             " (no open measurement)"))
        for j in jobs:
            print(f"  {j}")
    return {"jobs": jobs}


def _ingest(store: Any, args) -> dict:
    from leka.remote import loop, rounds

    counts = rounds.ingest(store, args.jobs)
    resumed: dict[str, Any] = {}
    if not args.no_resume:
        given = {"tasks_paths": args.tasks, "llm": args.llm, "base_url": args.base_url}
        resumed = {rid: (None if final is None else {"speedup": final.get("speedup"), "correct": final.get("correct")})
                   for rid, final in loop.resume_all(store, given).items()}
    if not args.json:
        print("ingested: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()))
        if resumed:
            render("runs resumed", [Col("run", "id"), Col("state", "desc")],
                   [[rid, "paused" if f is None else f"done, speedup {f.get('speedup')}"] for rid, f in resumed.items()],
                   output_mode(args))
    return {"ingested": counts, "resumed": resumed}


def _status(store: Any, args) -> dict:
    runs, rnds, open_reqs = store.runs(), store.rounds(), store.open_requests()
    if args.json:
        return {"runs": runs, "rounds": rnds, "open": len(open_reqs)}
    asked: dict[str, int] = {}
    for r in open_reqs:
        asked[r["run_id"]] = asked.get(r["run_id"], 0) + 1
    mode = output_mode(args)
    rows = [[r["run_id"], r["status"], str(asked.get(r["run_id"], 0)), (r["options"].get("tune") or {}).get(
        "task_id", "?"), (r["options"].get("tune") or {}).get("target", "?")] for r in runs]
    render("remote runs", [Col("run", "id"), Col("status", "id"), Col("open", "num"),
                                            Col("task", "name"), Col("target", "desc", optional=True)], rows, mode)
    if rnds:
        render("rounds", [Col("round", "num"), Col("ingested", "id"), Col("job folder", "desc")],
               [[str(r["round"]), "yes" if r["ingested"] else "no", r["job_dir"]] for r in rnds], mode)
    print(f"{len(open_reqs)} open measurement(s); --json for every run's options\nstore: {store.path}")
    return {}
