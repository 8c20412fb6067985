"""`leka trace RUN`: the optimisation path of a LEKA run and what each accepted decision bought."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser(
        "trace", help="show a LEKA run's optimisation path (speedup bought by each decision, by layer)",
        description="Print the accepted decisions of a LEKA run in order, with the speedup ratio each bought and "
                    "the product per layer (algorithm, schedule, memory); --steps adds every step (proposals, "
                    "failures, routing decisions).")
    p.add_argument("run", nargs="?", help="run id (see --list)")
    p.add_argument("--list", action="store_true", help="list recent runs")
    p.add_argument("--steps", action="store_true", help="also show every step")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from leka.agent.progress import HEADERS, step_cells
    from leka.agent.trace import TraceStore, contributions, trace_path
    from leka.errors import LekaError

    if not trace_path().exists():
        raise LekaError(f"no LEKA runs here ({trace_path()} does not exist); run `leka tune TASK` first")
    store = TraceStore()
    console = Console()
    if args.list or not args.run:
        runs = store.list_runs()
        if args.json:
            print(json.dumps([{k: r[k] for k in ("run_id", "task", "target", "proposer", "status", "created")}
                              for r in runs], indent=2))
            return 0
        t = Table(title=f"LEKA runs in {store.path}")
        for h in ("run", "task", "target", "proposer", "status", "speedup"):
            t.add_column(h)
        for r in runs:
            sp = (r["final"] or {}).get("speedup")
            t.add_row(escape(r["run_id"]), escape(r["task"]), r["target"], r["proposer"], r["status"],
                      f"{sp:.2f}x" if isinstance(sp, (int, float)) else "-")
        console.print(t)
        return 0
    run_rec = store.get_run(args.run)
    steps = store.steps(args.run)
    contrib = contributions(steps)
    if args.json:
        print(json.dumps({"run": run_rec, "contributions": contrib, "steps": steps if args.steps else None},
                         indent=2, default=str))
        return 0
    t = Table(title=f"LEKA {args.run}: {run_rec['task']} on {run_rec['target']} ({run_rec['proposer']}, "
                    f"{run_rec['status']})")
    for h in ("step", "layer", "decision", "speedup", "bought", "prompt"):
        t.add_column(h, overflow="fold")
    for p in contrib["path"]:
        t.add_row(str(p["step"]), p["layer"], escape(p["summary"][:90]),
                  f"{p['speedup_before']:.2f}x -> {p['speedup_after']:.2f}x", f"{p['ratio']:.2f}x",
                  (p.get("prompt_hash") or "-")[:12])
    console.print(t)
    by = contrib["by_layer"]
    console.print("by layer: " + "  ".join(f"{k} {v:.2f}x" for k, v in by.items())
                  + f"  = {contrib['total']:.2f}x in search")
    final = run_rec.get("final")
    if final:
        sp = final.get("speedup")
        console.print(f"final (fresh worker): correct={final.get('correct')} "
                      + (f"speedup {sp:.2f}x vs {final.get('baseline')}" if isinstance(sp, (int, float)) else
                         f"failure {final.get('failure')}"))
    if args.steps:
        st = Table(title="every step")
        for h in HEADERS:
            st.add_column(h, overflow="fold")
        for s in steps:
            st.add_row(*(escape(c) for c in step_cells(s)))
        console.print(st)
    return 0
