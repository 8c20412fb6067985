"""`leka remote tune|batch|ingest|status`: LEKA tuning with measurements from a remote host (job folders).

    leka remote tune TASK... --target cuda      # runs start; each pauses on its first measurements
    leka remote batch -o jobs                   # one job folder per task: every pending candidate + baseline
    (remote host: python -m leka.remote.multi jobs/round-N/*  with `leka gpu-bundle`'s runtime-only TVM)
    leka remote ingest jobs                     # results in; every paused run resumes until it pauses again
"""
from __future__ import annotations

import argparse
import json

from leka.remote.pending import default_pending_path


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
    b = s.add_parser("batch", help="build every pending measurement into job folders (one round)")
    b.add_argument("-o", "--out", required=True)
    b.add_argument("--trials", type=int, default=2)
    b.add_argument("--number", type=int, default=20)
    b.add_argument("--rounds", type=int, default=7)
    i = s.add_parser("ingest", help="read a round's results and resume the paused runs")
    i.add_argument("jobs")
    i.add_argument("--no-resume", action="store_true")
    i.add_argument("--llm", metavar="PROVIDER:MODEL", help="the proposer the paused runs were started with")
    i.add_argument("--base-url", help="its server, as the paused runs were started with")
    i.add_argument("--tasks", action="append", default=[], metavar="PATH",
                   help="user task folders of the paused runs, as they were started with (never read from the store)")
    s.add_parser("status", help="runs, rounds and open requests")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.agent.session import TuneOptions
    from leka.remote import loop, rounds
    from leka.remote.pending import PendingStore

    store = PendingStore(args.store)
    if args.remote_cmd == "tune":
        policy = loop.remote_policy(args.target, args.max_steps or loop.REMOTE_STEPS)
        opts = [TuneOptions(task_id=t, target=args.target, baseline=args.baseline, budget=args.budget, policy=policy)
                for t in args.tasks]
        for rid in loop.start(store, opts):
            print(f"{rid}: paused on {len(store.open_requests())} open measurement(s) in all")
    elif args.remote_cmd == "batch":
        jobs = rounds.batch(store, args.out, trials=args.trials, number=args.number, rounds=args.rounds)
        print(json.dumps({"jobs": [str(j) for j in jobs]}))
    elif args.remote_cmd == "ingest":
        print(json.dumps(rounds.ingest(store, args.jobs)))
        if not args.no_resume:
            given = {"tasks_paths": args.tasks, "llm": args.llm, "base_url": args.base_url}
            for rid, final in loop.resume_all(store, given).items():
                print(f"{rid}: " + ("paused" if final is None else f"done, speedup {final.get('speedup')}"))
    else:
        print(json.dumps({"runs": store.runs(), "rounds": store.rounds(), "open": len(store.open_requests())},
                         indent=1, default=str))
    return 0
