"""`leka optimize MODEL.onnx --target T -o OUT`: a whole model in, a faster verified deployable artifact out."""
from __future__ import annotations

from leka.executors.cli import add_executor_flags


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
               "Exit status: 0 written, 1 the optimised build disagrees with ONNX Runtime (nothing written), "
               "2 bad input. Docs: docs/optimize.md",
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("model", help="ONNX model file")
    p.add_argument("--target", default="host-cpu",
                   help="preset (host-cpu, cuda, opencl-pocl, rpi5, jetson-orin-nano, ...; `leka targets`) or a "
                        "TVM target dict as JSON (default host-cpu)")
    p.add_argument("-o", "--out", metavar="OUT", help="artifact directory (default: MODEL's name + .leka)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=DxD...",
                   help="pin an input's dynamic dimensions, e.g. input=1x3x224x224 (repeatable)")
    p.add_argument("--budget", default="minutes=10",
                   help="whole-model limits split over the kernels, e.g. minutes=10 or compiles=100,measurements=100 "
                        "(default minutes=10)")
    p.add_argument("--method", default="leka",
                   help="tuning method: leka (default), tvm-dlight, metaschedule ... "
                        "(`leka bench run --method list` lists them)")
    p.add_argument("--llm", metavar="PROVIDER:MODEL", help="model proposer for the leka method (default: offline)")
    p.add_argument("--base-url", help="OpenAI-compatible server URL for --llm compat:MODEL")
    p.add_argument("--jobs", type=int, default=1, help="kernels tuned in parallel worker processes (default 1)")
    p.add_argument("--db", metavar="PATH", help="tuning database (default .leka/tuning.db, or $LEKA_HOME/tuning.db)")
    p.add_argument("--resume", action="store_true",
                   help="continue the latest interrupted run of this model/target/method: finished kernels are "
                        "not re-tuned, an interrupted agent run resumes from its checkpoint")
    p.add_argument("--time", type=float, default=1.0, metavar="SECONDS",
                   help="minimum seconds per build in the end-to-end latency comparison (0 skips it; default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--rpc", metavar="HOST:PORT:KEY",
                   help="measure the kernels on a remote device through a TVM RPC tracker (docs/targets.md)")
    add_executor_flags(p, rpc=False, unit="kernel", local="--jobs worker processes here")
    p.set_defaults(func=run)


def run(args) -> int:
    from leka.executors.cli import executor_from_args
    from leka.optimize.pipeline import OptimizeOptions, optimize
    from leka.optimize.report import LATENCY_HEAD, latency_rows, summary_lines

    if args.executor != "local" and args.jobs != 1:
        from leka.errors import LekaError

        raise LekaError(f"--jobs is for the local executor; with --executor {args.executor} the cluster's nodes "
                        "set how many kernels run at once")
    executor = executor_from_args(args)
    try:
        opts = OptimizeOptions(model=args.model, target=args.target, out=args.out, shapes=list(args.shape),
                               budget=args.budget, method=args.method, llm=args.llm, base_url=args.base_url,
                               jobs=args.jobs, db=args.db, resume=args.resume, time_s=args.time, quiet=args.quiet,
                               rpc=args.rpc, executor=executor)
        manifest = optimize(opts)
    finally:
        if executor is not None:
            executor.close()
    from leka.optimize.pipeline import default_out

    out = args.out or default_out(args.model)
    print("\n".join(summary_lines(manifest)))
    rows = latency_rows(manifest)
    if rows:
        width = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(LATENCY_HEAD)]
        for r in [LATENCY_HEAD, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, width)))
    print(f"artifact: {out}/ (model.so, manifest.json, report.md, report.html); run it: leka run {out} "
          "--inputs in.npz --outputs out.npz")
    return 0
