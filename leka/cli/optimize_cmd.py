"""`leka optimize MODEL.onnx --target T -o OUT`: a whole model in, a faster verified deployable artifact out."""
from __future__ import annotations

from leka.cli.tables import Col, add_output_flags, output_mode, render
from leka.executors.cli import add_executor_flags

from .grammar import add_deprecated, add_json, add_llm, add_out, add_resume


def register(sub) -> None:
    p = sub.add_parser(
        "optimize", help="optimise a whole ONNX model for a target: tuned kernels, verified vs ONNX Runtime",
        description="Import MODEL (ONNX) through TVM Relax, fuse it into kernels, profile the default build, "
                    "split the budget over the kernels by their share of the end-to-end time (kernels under "
                    "2 % get nothing), tune each with --method (default: the LEKA agent, offline proposer "
                    "unless --llm), rebuild the model with the verified winners, check it against ONNX Runtime "
                    "on random inputs from several distributions, and write OUT: model.so (TVM runtime "
                    "library), manifest.json, report.md, report.html. Winners are kept in a tuning database so "
                    "a re-run, or another model sharing layers, reuses them at no budget cost.",
        epilog="Examples:\n"
               "  leka optimize kws.onnx --target host-cpu -o kws.leka --budget minutes=5\n"
               "  leka optimize resnet.onnx --shape input=1x3x224x224 --jobs 2\n"
               "  leka optimize kws.onnx --target cuda -o kws-cuda.leka   # build-only here; run on the GPU box\n"
               "  leka optimize kws.onnx --executor ray --ray-address HEAD:6379   # kernels on a Ray cluster\n"
               "  leka run kws.leka --inputs in.npz --outputs out.npz\n"
               "A winner that breaks the model's build is dropped (bisected; the manifest's 'dropped' says why) "
               "and the rest still written.\n"
               "Exit status: 0 written, 1 the build disagrees with ONNX Runtime or fails even with no winner "
               "(nothing written), 2 bad input, 4 the model does not fit --budget minutes (nothing written; the "
               "tuning db keeps the kernels decided). Docs: docs/optimize.md",
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="ONNX model file")
    p.add_argument("--list-ops", action="store_true",
                   help="list the ONNX operators leka optimize imports, and how, then exit")
    p.add_argument("--target", default="host-cpu",
                   help="preset (host-cpu, cuda, opencl-pocl, rpi5, jetson-orin-nano, ...; `leka targets`) or a "
                        "TVM target dict as JSON; an llvm dict for this host's arch and mcpu (or none) is tuned and "
                        "timed like host-cpu (default host-cpu)")
    add_out(p, "artifact directory (default: MODEL's name + .leka; missing parent folders are made)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=DxD...",
                   help="pin an input's dynamic dimensions, e.g. input=1x3x224x224 (repeatable)")
    p.add_argument("--budget", default="minutes=10",
                   help="whole-model limits split over the kernels, e.g. minutes=10 or compiles=100,measurements=100 "
                        "(default minutes=10); minutes left over go to further rounds on kernels whose search is "
                        "not exhausted, and a db entry from a smaller budget is tuned further")
    p.add_argument("--method", default="leka",
                   help="tuning method: leka (default), tvm-dlight, metaschedule ... "
                        "(`leka bench run --method list` lists them)")
    add_llm(p, "model proposer of the leka method (default: the offline one)")
    p.add_argument("--jobs", type=int, default=1, help="kernels tuned in parallel worker processes (default 1)")
    p.add_argument("--db", metavar="PATH", help="tuning database (default .leka/tuning.db, or $LEKA_HOME/tuning.db)")
    add_resume(p, "an optimize run of this model/target/method: finished kernels are not re-tuned, an "
                  "interrupted agent run resumes from its checkpoint")
    p.add_argument("--time-s", type=float, default=1.0, metavar="S",
                   help="minimum seconds per build in the end-to-end latency comparison (0 skips it; default 1)")
    add_deprecated(p, "--time", "--time-s", "time_s", float)
    add_json(p, "the manifest (kernels, latencies, verification)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--rpc", metavar="HOST:PORT:KEY",
                   help="measure the kernels on a remote device through a TVM RPC tracker (docs/targets.md)")
    p.add_argument("--remote", action="store_true",
                   help="tune on a host reachable only by files (a GPU box): each kernel becomes a LEKA run that "
                        "pauses on its measurements; the command says how to batch, run and ingest the rounds "
                        "(`leka remote`), and the same command again builds the artifact (docs/optimize.md)")
    p.add_argument("--remote-store", metavar="PATH",
                   help="pending-measurement store of the remote runs (default: `leka remote`'s, "
                        ".leka/remote/pending.sqlite)")
    p.add_argument("--remote-steps", type=int, metavar="N",
                   help="search steps per kernel run with --remote: one remote round each, plus one for the "
                        "final re-measure (default 2)")
    p.add_argument("--remote-stop", action="store_true",
                   help="with --remote: end the waiting runs now, each kernel keeping the best candidate the "
                        "device verified so far (else dlight's), and build")
    add_executor_flags(p, rpc=False, unit="kernel", local="--jobs worker processes here")
    add_output_flags(p)
    p.set_defaults(func=run)


def list_ops(args) -> int:
    from leka.optimize.op_support import HOW, supported_ops

    rows = supported_ops()
    if getattr(args, "json", False):
        from .grammar import print_json

        print_json({"operators": [{"domain": d, "op": o, "how": h} for d, o, h in rows], "how": HOW})
        return 0
    render(f"ONNX operators leka optimize imports ({len(rows)})", [Col("domain", "id"), Col("op", "id"),
                                                                  Col("how", "id")], rows, output_mode(args),
           caption="; ".join(f"{k}: {v}" for k, v in HOW.items()))
    return 0


def run(args) -> int:
    if args.list_ops:
        return list_ops(args)
    from leka.executors.cli import executor_from_args
    from leka.optimize.pipeline import OptimizeOptions, optimize
    from leka.optimize.report import LATENCY_HEAD, latency_rows, summary_lines

    from .grammar import file_before_resume, print_json

    file_before_resume(args, "model", "the ONNX model file (or --list-ops)")
    if args.executor != "local" and args.jobs != 1:
        from leka.errors import LekaError

        raise LekaError(f"--jobs is for the local executor; with --executor {args.executor} the cluster's nodes "
                        "set how many kernels run at once")
    executor = executor_from_args(args)
    try:
        opts = OptimizeOptions(model=args.model, target=args.target, out=args.out, shapes=list(args.shape),
                               budget=args.budget, method=args.method, llm=args.llm, base_url=args.base_url,
                               jobs=args.jobs, db=args.db, resume=args.resume, time_s=args.time_s, quiet=args.quiet,
                               rpc=args.rpc, executor=executor, **_remote_options(args))
        manifest = optimize(opts)
    finally:
        if executor is not None:
            executor.close()
    from leka.optimize.pipeline import default_out
    from leka.optimize.remote import RemoteWaiting, next_steps

    out = args.out or default_out(args.model)
    if isinstance(manifest, RemoteWaiting):
        steps = next_steps(manifest, _again(args), _proposer_flags(args))
        if args.json:
            print_json({"status": "waiting_for_remote", "next_steps": steps})
        else:
            print("\n".join(steps))
        return 0
    if args.json:
        print_json({"status": "written", "out": str(out), "manifest": manifest})
        return 0
    print("\n".join(summary_lines(manifest)))
    rows = latency_rows(manifest)
    if rows:
        from .tables import Col, render

        render(None, [Col(LATENCY_HEAD[0], "id")] + [Col(h, "num") for h in LATENCY_HEAD[1:]], rows, "plain")
    print(f"artifact: {out}/ (model.so, manifest.json, report.md, report.html); run it: leka run {out} "
          "--inputs in.npz --outputs out.npz")
    return 0


def _remote_options(args) -> dict:
    from leka.errors import LekaError
    from leka.optimize.remote import REMOTE_STEPS

    if not args.remote and (args.remote_store or args.remote_steps is not None or args.remote_stop):
        raise LekaError("--remote-store, --remote-steps and --remote-stop go with --remote")
    return {"remote": args.remote, "remote_store": args.remote_store, "remote_stop": args.remote_stop,
            "remote_steps": REMOTE_STEPS if args.remote_steps is None else args.remote_steps}


def _proposer_flags(args) -> str:
    """--llm/--base-url as given: `leka remote ingest` resumes the runs with the proposer its command line names."""
    import shlex

    return "".join(f" {flag} {shlex.quote(v)}" for flag, v in (("--llm", args.llm), ("--base-url", args.base_url))
                   if v)


def _again(args) -> str:
    """The command that finishes a --remote optimisation (the options that pick the run and the artifact)."""
    import shlex

    parts = ["leka", "optimize", args.model, "--target", args.target, "--remote"]
    for flag, value in (("-o", args.out), ("--db", args.db), ("--remote-store", args.remote_store)):
        if value:
            parts += [flag, value]
    for shape in args.shape:
        parts += ["--shape", shape]
    return " ".join(shlex.quote(a) for a in parts)
