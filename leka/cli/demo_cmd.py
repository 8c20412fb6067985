"""`leka demo`: the end-to-end job of `make demo` — `leka optimize` on a bundled MLPerf Tiny model (the
DS-CNN keyword spotter, built with onnx.helper, no download) for host-cpu with the offline proposer, then
`leka run` on the artifact; with --kernels, also every shipped example candidate evaluated on its target
and the agent on one kernel."""
from __future__ import annotations

import contextlib
from pathlib import Path

from .grammar import add_json, add_llm, add_out


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the end-to-end demo: optimise a bundled KWS model, compare with ONNX Runtime",
                       description="Write the MLPerf Tiny KWS DS-CNN as an ONNX file, optimise it for host-cpu with "
                                   "`leka optimize` (offline proposer, --model-budget), print its end-to-end "
                                   "latency against tvm-naive, tvm-dlight and ONNX Runtime, and run the artifact "
                                   "with `leka run`. --kernels adds the kernel-level demo: every example candidate "
                                   "under examples/<target>/ evaluated on its target, then the agent on one task.")
    p.add_argument("--model", default="kws-dscnn", help="bundled model to optimise (default kws-dscnn; '' to skip)")
    p.add_argument("--model-budget", default="minutes=3", help="budget of `leka optimize` (default minutes=3)")
    add_out(p, "folder for the model and its artifact (default .leka/demo)", "--workdir", default=".leka/demo")
    p.add_argument("--kernels", action="store_true", help="also run the kernel-level demo (examples, agent)")
    p.add_argument("--examples", default=str(Path(__file__).resolve().parents[2] / "examples"),
                   help="folder of example candidates (default: the repository's examples/)")
    p.add_argument("--tune", default="ex-matmul-256", metavar="TASK",
                   help="task the LEKA agent optimises after the examples (default ex-matmul-256; '' to skip)")
    p.add_argument("--budget", default="compiles=10,measurements=10,minutes=5",
                   help="budget of that agent run (default compiles=10,measurements=10,minutes=5)")
    add_llm(p, "model proposer of the optimisation and the agent run (default: the offline one)")
    add_json(p, "what each step did (the steps' own output goes to stderr)")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from .grammar import print_json

    summary: dict = {}
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        failed = _optimize_model(args, summary) if args.model else 0
        if args.kernels:
            failed += _kernels(args, summary)
    if args.json:
        print_json({"ok": not failed, **summary})
    return 1 if failed else 0


def _child_stdout(args):
    """Where a step's own output goes: stderr under --json (stdout holds the JSON), else the terminal."""
    import sys

    return sys.stderr if args.json else None


def _llm_flags(args) -> list[str]:
    return [a for flag, v in (("--llm", args.llm), ("--base-url", args.base_url)) if v for a in (flag, v)]


def _optimize_model(args, summary: dict) -> int:
    """The main job: a model in, a verified faster artifact out (as a user runs it, through the CLI)."""
    import subprocess
    import sys

    import numpy as np

    from leka.optimize.demo_models import write

    work = Path(args.out)
    model = write(args.model, work)
    out = work / f"{args.model}.leka"
    print(f"== leka optimize {model} --target host-cpu -o {out} --budget {args.model_budget} "
          + (f"(--llm {args.llm})" if args.llm else "(offline proposer, no LLM)"), flush=True)
    cli = [sys.executable, "-m", "leka.cli.main"]
    sys.stdout.flush()
    rc = subprocess.run(cli + ["optimize", str(model), "--target", "host-cpu", "-o", str(out), "--budget",
                               args.model_budget, *_llm_flags(args)], stdout=_child_stdout(args)).returncode
    summary["optimize"] = {"model": str(model), "out": str(out), "exit": rc}
    if rc != 0:
        return 1
    import onnx

    inputs = {i.name: np.random.default_rng(0).standard_normal(
        [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in onnx.load(str(model)).graph.input}
    np.savez(work / "inputs.npz", allow_pickle=False, **inputs)
    print(f"== leka run {out} --inputs {work / 'inputs.npz'} -o {work / 'outputs.npz'} --check", flush=True)
    rc = subprocess.run(cli + ["run", str(out), "--inputs", str(work / "inputs.npz"), "-o",
                               str(work / "outputs.npz"), "--check"], stdout=_child_stdout(args)).returncode
    summary["run"] = {"artifact": str(out), "outputs": str(work / "outputs.npz"), "exit": rc}
    return int(rc != 0)


def _kernels(args, summary: dict) -> int:
    import sys

    from rich.console import Console

    from leka.candidate import load_candidate
    from leka.errors import LekaError
    from leka.evaluator import EvalConfig, Evaluator
    from leka.targets import all_presets
    from leka.tasks import get_task

    console = Console(file=sys.stdout)
    root = Path(args.examples)
    presets = all_presets()
    files = sorted(f for d in root.iterdir() if d.is_dir() and d.name in presets for f in d.glob("*.py"))
    if not files:
        raise LekaError(f"no example candidates under {root}/<target>/")
    console.print(f"[bold]LEKA demo[/]: {len(files)} example candidates; runnable targets here: "
                  + ", ".join(p.name for p in presets.values() if p.runnable))
    rows = []
    failed = 0
    by_target: dict[str, list] = {}
    for f in files:
        c = load_candidate(f)
        by_target.setdefault(c.target or f.parent.name, []).append(c)
    for tname, cands in by_target.items():
        with Evaluator(presets[tname], EvalConfig()) as ev:
            for c in cands:
                console.print(f"  evaluating {c.path} on {tname} ...")
                r = ev.evaluate(get_task(c.task), c.source)
                ok = r.status in ("ok", "build_only")
                failed += not ok
                summary.setdefault("examples", []).append(
                    {"target": tname, "task": r.task, "status": r.status, "speedup": r.speedup, "error": r.error})
                fmt = (lambda v, p=4: f"{v:.{p}f}" if v is not None else "-")
                rows.append([tname, r.task, r.status if ok else f"{r.status}: {r.error}", fmt(r.candidate_ms),
                             fmt(r.baseline_ms), f"{r.speedup:.2f}×" if r.speedup else "-", fmt(r.compile_s, 2)])
    from .tables import Col, render

    render("examples: correctness and speedup vs tvm-naive",
           [Col("target", "id"), Col("task", "name"), Col("status", "text", want=16), Col("candidate ms", "num"),
            Col("tvm-naive ms", "num", optional=True), Col("speedup", "num"), Col("compile s", "num", optional=True)],
           rows, "rich" if console.is_terminal else "plain", console)
    console.print("build_only = compiled here (CUDA source / cross target); run it on the device: docs/cuda.md")
    if args.tune:
        failed += _tune(console, args.tune, args.budget, _llm_flags(args), summary, _child_stdout(args))
    return failed


def _tune(console, task_id: str, budget: str, llm: list[str], summary: dict, to) -> int:
    """The agent on one task, then its optimisation path, as a user would run them."""
    import json
    import subprocess
    import sys

    console.print(f"\n[bold]LEKA agent[/] on {task_id} (host-cpu, {' '.join(llm) or 'offline proposer'}, "
                  f"budget {budget})")
    cmd = [sys.executable, "-m", "leka.cli.main", "tune", task_id, "--target", "host-cpu", "--budget", budget, *llm]
    r = subprocess.run(cmd + ["--json"], text=True, stdout=subprocess.PIPE)
    if r.returncode != 0:
        console.print(f"[red]leka tune failed[/] (exit {r.returncode})")
        return 1
    rec = json.loads(r.stdout)
    summary["tune"] = {k: rec.get(k) for k in ("run_id", "task", "correct", "speedup", "baseline", "proposer")}
    run_id = rec.get("run_id")
    console.print(f"  run {run_id}: correct={rec.get('correct')} speedup={rec.get('speedup')} "
                  f"vs {rec.get('baseline')} (proposer: {rec.get('proposer')})")
    sys.stdout.flush()
    return subprocess.run([sys.executable, "-m", "leka.cli.main", "trace", str(run_id)], stdout=to).returncode != 0
