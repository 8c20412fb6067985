"""`leka run OUT --inputs in.npz --outputs out.npz`: execute an artifact with TVM's runtime alone."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("run", help="run an artifact of `leka optimize` (TVM runtime only, no compiler)",
                       description="Load OUT/model.so with TVM's runtime and the Relax VM and run it on the arrays "
                                   "of --inputs (an .npz keyed by the model's input names); write the outputs, "
                                   "keyed by output names, to --outputs. --check runs the inputs stored in OUT "
                                   "and compares with ONNX Runtime's outputs recorded when it was built (use it "
                                   "on the device for a build-only target).")
    p.add_argument("out", metavar="OUT", help="artifact directory written by `leka optimize`")
    p.add_argument("--inputs", help=".npz of input arrays keyed by input name")
    p.add_argument("--outputs", help=".npz to write the outputs to")
    p.add_argument("--check", action="store_true", help="verify OUT against its recorded ONNX Runtime outputs")
    p.add_argument("--threads", type=int, help="CPU threads (default: TVM's)")
    p.add_argument("--time", type=int, default=0, metavar="N",
                   help="also print the median latency of N inferences (on the check or --inputs arrays)")
    p.set_defaults(func=run)


def run(args) -> int:
    import numpy as np

    from leka.errors import LekaError
    from leka.optimize.runtime import LoadedArtifact, check_against_expected, thread_env

    if not args.check and not args.inputs:
        raise LekaError("give --inputs in.npz (and --outputs out.npz), or --check")
    thread_env(args.threads)
    art = LoadedArtifact(args.out)
    if args.check:
        errs = check_against_expected(art, args.out)
        print("check passed: " + ", ".join(f"{k} max abs error {v:.3g}" for k, v in errs.items()))
    arrays = art.read_inputs(args.inputs) if args.inputs else None
    if args.time > 0:
        from pathlib import Path

        from leka.optimize.artifact import CHECK_INPUTS

        timed = arrays if arrays is not None else art.read_inputs(Path(args.out) / CHECK_INPUTS, "check file")
        print(f"median latency {art.median_ms(timed, args.time):.4g} ms over {args.time} runs "
              f"({art.manifest['target']['name']}, device {art.dev})")
    if arrays is not None:
        outs = art.run(arrays)
        if args.outputs:
            np.savez(args.outputs, **outs)
            print(f"wrote {', '.join(outs)} to {args.outputs}")
        else:
            for k, v in outs.items():
                print(f"{k}: {v.dtype}{list(v.shape)} {np.array2string(v.ravel()[:8], precision=4)}")
    return 0
