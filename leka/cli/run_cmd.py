"""`leka run OUT --inputs in.npz -o out.npz`: execute an artifact with TVM's runtime alone."""
from __future__ import annotations

from .grammar import add_deprecated, add_json, add_out


def register(sub) -> None:
    p = sub.add_parser("run", help="run an artifact of `leka optimize` (TVM runtime only, no compiler)",
                       description="Load OUT/model.so with TVM's runtime and the Relax VM and run it on the arrays "
                                   "of --inputs (an .npz keyed by the model's input names); write the outputs, "
                                   "keyed by output names, to -o/--out. --check runs the inputs stored in OUT "
                                   "and compares with ONNX Runtime's outputs recorded when it was built (use it "
                                   "on the device for a build-only target).")
    p.add_argument("artifact", metavar="OUT", help="artifact directory written by `leka optimize`")
    p.add_argument("--inputs", help=".npz of input arrays keyed by input name")
    add_out(p, ".npz to write the outputs to", "--outputs")
    p.add_argument("--check", action="store_true", help="verify OUT against its recorded ONNX Runtime outputs")
    p.add_argument("--threads", type=int, help="CPU threads (default: TVM's)")
    p.add_argument("--time-runs", type=int, default=0, metavar="N",
                   help="also print the median latency of N inferences (on the check or --inputs arrays)")
    add_deprecated(p, "--time", "--time-runs", "time_runs", int)
    add_json(p, "the check errors, the latency and the outputs' names, dtypes and shapes")
    p.set_defaults(func=run)


def run(args) -> int:
    import numpy as np

    from leka.errors import LekaError
    from leka.optimize.runtime import LoadedArtifact, check_against_expected, thread_env

    from .grammar import print_json

    if not args.check and not args.inputs:
        raise LekaError("give --inputs in.npz (and -o out.npz), or --check")
    thread_env(args.threads)
    art = LoadedArtifact(args.artifact)
    say = (lambda text: None) if args.json else print
    report: dict = {"artifact": args.artifact}
    if args.check:
        errs = check_against_expected(art, args.artifact)
        report["check"] = {"passed": True, "max_abs_error": errs}
        say("check passed: " + ", ".join(f"{k} max abs error {v:.3g}" for k, v in errs.items()))
    arrays = art.read_inputs(args.inputs) if args.inputs else None
    if args.time_runs > 0:
        from pathlib import Path

        from leka.optimize.artifact import CHECK_INPUTS

        timed = arrays if arrays is not None else art.read_inputs(Path(args.artifact) / CHECK_INPUTS, "check file")
        ms = art.median_ms(timed, args.time_runs)
        report["latency"] = {"median_ms": ms, "runs": args.time_runs, "target": art.manifest["target"]["name"],
                             "device": str(art.dev)}
        say(f"median latency {ms:.4g} ms over {args.time_runs} runs ({art.manifest['target']['name']}, "
            f"device {art.dev})")
    if arrays is not None:
        outs = art.run(arrays)
        report["outputs"] = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in outs.items()}
        if args.out:
            np.savez(args.out, allow_pickle=False, **outs)
            report["out"] = args.out
            say(f"wrote {', '.join(outs)} to {args.out}")
        else:
            for k, v in outs.items():
                say(f"{k}: {v.dtype}{list(v.shape)} {np.array2string(v.ravel()[:8], precision=4)}")
    if args.json:
        print_json(report)
    return 0
