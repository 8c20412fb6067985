"""A compromised evaluation worker, for classes 3 and 4 of tests/adversarial (see README.md): what code
running in the worker could send back. tests/test_adversarial.py starts it in place of
`python -m leka.evaluator.worker`, in the same sandbox and with the same pipes:

    python standin_worker.py MODE ARG --in FD --out FD

MODE pickle: answers the first request with a pickle whose __reduce__ runs `touch ARG` where it is loaded
(the evaluating process must never unpickle what a worker sends).
MODE payload: runs the shell command ARG, base64-encoded so that its argv does not carry the payload's tag (what a candidate that escaped the parser and the IR policy would
run), then serves as the real worker: the sandbox must contain it.
MODE lie-scale / lie-runs: the real worker, with every timing reply doctored so that the candidate looks
ARG times faster; lie-scale divides its per-run times, lie-runs also multiplies its runs per round so that
the reported total work stays what it was (the parent's wall-clock check must see through both).
"""
from __future__ import annotations

import base64
import os
import pickle
import sys


class _Payload:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def _doctor(reply: dict, factor: float, keep_work: bool) -> dict:
    if reply.get("ok") and "candidate_s" in reply:
        reply["candidate_s"] = [t / factor for t in reply["candidate_s"]]
        if keep_work:
            reply["candidate_n"] = int(reply["candidate_n"] * factor)
    return reply


def main(argv: list[str]) -> None:
    mode, arg = argv[0], argv[1]
    fd_in, fd_out = int(argv[argv.index("--in") + 1]), int(argv[argv.index("--out") + 1])
    if mode == "pickle":
        from leka.evaluator.wire import read_frame

        read_frame(fd_in)
        os.write(fd_out, pickle.dumps({"ok": True, "x": _Payload(arg)}))
        os.read(fd_in, 1)  # wait for the parent to give up on us
        return
    from leka.evaluator import worker

    if mode == "payload":
        os.system(base64.b64decode(arg).decode())
        worker.serve(fd_in, fd_out)
        return
    real = worker._handle
    worker._handle = lambda req, cache: _doctor(real(req, cache), float(arg), mode == "lie-runs")
    worker.serve(fd_in, fd_out)


if __name__ == "__main__":
    main(sys.argv[1:])
