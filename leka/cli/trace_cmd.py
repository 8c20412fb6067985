"""`leka trace RUN`: the optimisation path of a LEKA run and what each accepted decision bought."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .grammar import add_out
from .tables import Col, add_output_flags, output_mode, render

PATH_LEGEND = ("legend: step = the agent step that made the decision; layer = the layer it changes (base: an "
               "algorithm rewrite kept to build on); speedup = the best kernel's speedup vs the baseline before -> "
               "after it (search timings); bought = after / before; kept = whether the final kernel still contains "
               "it (a decision replaced by a later one passes its credit on to it; the per-layer product counts "
               "only what the final kernel contains).")
STEPS_LEGEND = ("legend: # = proposal index in its step; result = accepted (became the best), base (an algorithm "
                "rewrite kept to build on), a speedup that was not enough, or the failure; route = the graph's "
                "decision after the step -> the node it went to.")


def register(sub) -> None:
    p = sub.add_parser(
        "trace", help="show a LEKA run's optimisation path (speedup bought by each decision, by layer)",
        description="Print the accepted decisions of a LEKA run in order, with the speedup ratio each bought and "
                    "the product per layer (algorithm, schedule, memory); --steps adds every proposal of every "
                    "step (rejected ones with their failure) and the routing decisions.")
    p.add_argument("run", nargs="?", help="run id, or a unique prefix of one (see --list)")
    p.add_argument("--list", action="store_true", help="list recent runs")
    p.add_argument("--steps", action="store_true", help="also show every proposal of every step (cut to 80 columns when piped: "
                                                             "--wide for each one whole)")
    add_out(p, "write every accepted decision's kernel (and best.py) into the folder PATH as TVMScript files "
               "with their `# leka:` header", "--export")
    p.add_argument("--tasks", action="append", default=[], metavar="PATH",
                   help="with --export: the run's user task folders, as given to `leka tune` (never read from "
                        "the store)")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.agent.trace import TraceStore, decision_irs, kernel_credit, trace_path
    from leka.errors import LekaError

    if not trace_path().exists():
        raise LekaError(f"no LEKA runs here ({trace_path()} does not exist); run `leka tune TASK` first")
    store = TraceStore()
    if args.list or not args.run:
        return _list(store, args)
    run_id = store.resolve(args.run)
    run_rec = store.get_run(run_id)
    steps = store.steps(run_id)
    irs = decision_irs(store, run_id, steps)
    best_ir = (run_rec.get("final") or {}).get("best_ir")
    from leka.agent.trace import contributions

    contrib = kernel_credit(contributions(steps), irs, best_ir)
    if args.out:
        _export(run_rec, irs, Path(args.out), args.tasks)
    if args.json:
        final = {k: v for k, v in (run_rec.get("final") or {}).items() if k not in ("best_ir", "eval")}
        print(json.dumps({"run": dict(run_rec, final=final or None), "contributions": contrib,
                          "steps": steps if args.steps else None}, indent=2, default=str))
        return 0
    _show(run_rec, steps, contrib, output_mode(args), args.steps)
    return 0


def _list(store: Any, args: Any) -> int:
    from leka.agent.progress import fmt_x

    runs = store.list_runs()
    if args.json:
        print(json.dumps([{k: r[k] for k in ("run_id", "task", "target", "proposer", "status", "created")}
                          for r in runs], indent=2))
        return 0
    rows = []
    for r in runs:
        sp = (r["final"] or {}).get("speedup")
        rows.append([r["run_id"], r["status"], fmt_x(sp), r["task"], r["target"]])
    render(f"LEKA runs in {store.path} (newest first)", [Col("run", "id"), Col("status", "id"),
                                                         Col("speedup", "num"), Col("task", "name"),
                                                         Col("target", "desc")], rows, output_mode(args))
    return 0


DECISION_WIDTH = 30  # the decision column in plain text: the whole table fits 80 columns
SOURCE_HINTS = ("T.prim_func", "T.Buffer", "T.grid", "T.block", "T.axis", "def ", "import ", "@T.")


def decision_line(summary: str, width: int = DECISION_WIDTH) -> str:
    """A decision in one short line: the rule that made it and its first change (`cpu.tile: split(...) +2`);
    an algorithm rewrite, whose summary is the new kernel's source, is named by its size. The whole summary
    stays in `--steps`, `--json` and `-o/--export`."""
    from leka.errors import one_line

    rule, sep, rest = summary.partition(": ")
    if not sep or " " in rule or "(" in rule:
        rule, rest = "", summary
    parts = [x.strip() for x in rest.split("; ") if x.strip()]
    if any(h in rest for h in SOURCE_HINTS):
        text = f"new kernel source ({len(parts)} lines)"
    else:
        text = (parts[0] if parts else rest) + (f" +{len(parts) - 1}" if len(parts) > 1 else "")
    return one_line(f"{rule}: {text}" if rule else text, width)


def _path_rows(contrib: dict[str, Any]) -> list[list[str]]:
    from leka.agent.progress import fmt_x

    rows = []
    for p in contrib["path"]:
        inside = {True: "yes", False: "no", None: "?"}[p.get("in_kernel")]
        layer = (p.get("credited_layer") or p["layer"]) + (" base" if p["kind"] == "base" else "")
        rows.append([str(p["step"]), layer, decision_line(p["summary"]),
                     f"{fmt_x(p['speedup_before'])}->{fmt_x(p['speedup_after'])}",
                     fmt_x(p["ratio"]) if p["speedup_before"] else "—", inside])
    return rows


PATH_COLS = [Col("step", "num"), Col("layer", "id"), Col("decision", "desc", want=20), Col("speedup", "id"),
             Col("bought", "num"), Col("kept", "id")]


def _show(run_rec: dict[str, Any], steps: list[dict[str, Any]], contrib: dict[str, Any], mode: str,
          show_steps: bool) -> None:
    import textwrap

    from rich.console import Console

    console = Console(highlight=False)
    if mode == "rich":
        def say(text: str) -> None:
            console.print(text, markup=False)
    else:
        def say(text: str) -> None:
            print(textwrap.fill(text, 80, subsequent_indent="  ", break_on_hyphens=False))
    rows = _path_rows(contrib)
    title = f"LEKA {run_rec['run_id']}: {run_rec['task']} on {run_rec['target']}"
    render(title, PATH_COLS, rows, mode, console)
    say(f"proposer {run_rec['proposer']}, status {run_rec['status']}; the full decisions: --steps, --json, -o DIR")
    if not rows:
        say("no decision was accepted: the baseline definition is the answer")
    by = contrib["by_layer"]
    say("by layer (in the final kernel): " + "  ".join(f"{k} {v:.2f}x" for k, v in by.items()))
    say(f"  = {contrib['total']:.2f}x in search")
    _say_final(say, run_rec)
    if mode == "rich":
        say(PATH_LEGEND)
    if show_steps:
        render(f"every step of {run_rec['run_id']}", STEP_COLS, step_rows(steps), mode, console)
        if mode == "rich":
            say(STEPS_LEGEND)


def _say_final(say: Any, run_rec: dict[str, Any]) -> None:
    from leka.agent.progress import fmt_x

    final = run_rec.get("final")
    if run_rec["status"] in ("failed", "interrupted"):
        say(f"run {run_rec['status']}: {(final or {}).get('error') or 'no reason recorded'}; "
            f"`leka tune --resume {run_rec['run_id']}` continues from its last checkpoint")
        return
    if not final:
        say(f"no final record (status {run_rec['status']})")
        return
    from .tune_cmd import best_line

    try:
        say(f"final: {best_line(final)}")
    except (KeyError, TypeError):  # a record of an older run without every timing field
        say(f"final (fresh worker): correct={final.get('correct')} speedup {fmt_x(final.get('speedup'))}")


def step_rows(steps: list[dict[str, Any]]) -> list[list[str]]:
    """Every proposal of every step: accepted, kept as base, rejected (with its speedup) or failed."""
    from leka.agent.progress import fmt_x

    rows = []
    for s in steps:
        route = f"{s.get('decision', '')}->{s.get('next', '')}"
        cands = s.get("candidates") or []
        if not cands:
            rows.append([str(s["step"]), s["layer"], "-", s.get("outcome", ""), s.get("error") or "no proposal",
                         route])
        for c in cands:
            if s.get("accepted") == c.get("index"):
                result = f"accepted {fmt_x(c.get('speedup'))}"
            elif s.get("base") == c.get("index"):
                result = f"base {fmt_x(c.get('speedup'))}"
            elif c.get("failure"):
                result = c["failure"]
            elif isinstance(c.get("speedup"), (int, float)):
                result = f"{fmt_x(c['speedup'])} (not kept)"
            else:
                result = "not evaluated"
            text = c.get("summary") or ""
            if c.get("error"):
                text = f"{text}: {c['error']}" if text else c["error"]
            rows.append([str(s["step"]), s["layer"], str(c.get("index", "")), result, text, route])
    return rows


STEP_COLS = [Col("step", "num"), Col("layer", "id"), Col("#", "num"), Col("result", "id"), Col("proposal"),
             Col("route", "id")]


def _export(run_rec: dict[str, Any], irs: list[dict[str, Any]], out: Path, tasks_paths: list[str]) -> None:
    """Every accepted decision's kernel as a candidate file, plus best.py (the final kernel)."""
    import sys

    from leka.kernel_export import ir_script, safe_name, write_kernel
    from leka.resume_guard import refuse_widening
    from leka.targets import get_target
    from leka.tasks import all_tasks, get_task

    opts = run_rec["options"].get("tune") or {}
    refuse_widening(run_rec["run_id"], [("--tasks", opts.get("tasks_paths"), tasks_paths)])
    all_tasks(tasks_paths)
    spec = opts.get("target") or run_rec["target"]
    task, target = get_task(run_rec["task"]), get_target(spec)
    written = []
    for d in irs:
        name = f"step{d['step']:02d}-{d['layer']}{'-base' if d['kind'] == 'base' else ''}.py"
        note = f"leka run {run_rec['run_id']} step {d['step']} ({d['layer']}): {d['summary']}"
        written.append(write_kernel(out / safe_name(name), ir_script(d["ir"], task, target), task.id, spec,
                                    note.splitlines()[0][:200]))
    final = run_rec.get("final") or {}
    if final.get("best_ir"):
        written.append(write_kernel(out / "best.py", ir_script(final["best_ir"], task, target), task.id, spec,
                                    f"leka run {run_rec['run_id']}: the final kernel"))
    print(f"wrote {len(written)} kernel file(s) to {out}", file=sys.stderr)
