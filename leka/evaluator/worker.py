"""The evaluation worker: a separate process that parses, builds, runs and times candidates.

Candidates never run in the evaluating process. This process runs in a sandbox (sandbox.py) and can
segfault, hang or exhaust its limits; the parent (pool.py) notices, records the failure and starts a new
one. It never judges correctness: it returns raw outputs (and the inputs after the run) to the parent.
Requests and replies are dicts of data framed by wire.py on two pipes passed as file descriptors;
stdout and stderr (compiler chatter) go to the parent's log file.

    python -m leka.evaluator.worker --in FD --out FD
"""
from __future__ import annotations

import io
import os
import resource
import sys
import time
import traceback
from typing import Any, cast

import numpy as np

from leka.errors import error_line


class _Loaded:
    """A built candidate ready to run: the runner's loaded module plus what the parent needs to know."""

    def __init__(self, exec_obj: Any, info: dict[str, Any]):
        self.exec = exec_obj
        self.info = info


def _parse(source: str):
    import tvm

    from leka.evaluator.ir_policy import IRPolicyViolation, check_ir
    from leka.evaluator.safe_parse import ScriptParseError, safe_from_source
    from leka.evaluator.script_guard import ScriptRejected

    # Candidate text is untrusted: the TVMScript subset is checked before TVM's parser sees it, the parser
    # runs without builtins, and the parsed IR may call nothing outside the kernel (docs/evaluator.md).
    try:
        obj = safe_from_source(source)
    except ScriptParseError as e:
        raise _Stage("parse", str(e)) from None
    except ScriptRejected as e:
        raise _Stage("parse", f"rejected TVMScript: {e}") from None
    if isinstance(obj, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": obj.with_attr("global_symbol", "main")})
    elif isinstance(obj, tvm.IRModule):
        if not any(gv.name_hint == "main" for gv in obj.functions):
            raise _Stage("parse", "the IRModule has no function named 'main'")
        mod = obj
    else:
        raise _Stage("parse", f"TVMScript parsed to {type(obj).__name__}, expected a PrimFunc or IRModule")
    try:
        check_ir(mod)
    except IRPolicyViolation as e:
        raise _Stage("policy", str(e)) from None
    return mod


class _Stage(Exception):
    def __init__(self, stage: str, msg: str, kind: str = "compile_error"):
        super().__init__(msg)
        self.stage, self.kind = stage, kind


def _check_signature(mod, args: list[tuple[str, tuple[int, ...], str, str]]) -> bool:
    """Returns True for a graph (Relax) module, False for a destination-passing PrimFunc."""
    import tvm

    main = mod["main"]
    if isinstance(main, tvm.tirx.PrimFunc):
        params = list(main.params)
        if len(params) != len(args):
            raise _Stage("signature", f"candidate has {len(params)} parameters, the task has {len(args)} "
                                      f"({', '.join(a[0] for a in args)})")
        for i, (p, (name, shape, dtype, _role)) in enumerate(zip(params, args)):
            pshape = tuple(int(x) for x in getattr(p, "shape", ()) or ())
            pdtype = str(getattr(p, "dtype", ""))
            if pshape != tuple(shape) or pdtype != dtype:
                raise _Stage("signature", f"parameter {i} '{p.name}' is {pdtype}{list(pshape)}, the task's "
                                          f"'{name}' is {dtype}{list(shape)}")
        return False
    n_in = sum(1 for a in args if a[3] == "input")
    if len(main.params) != n_in:
        raise _Stage("signature", f"graph main takes {len(main.params)} inputs, the task has {n_in}")
    return True


def _load(req: dict[str, Any]) -> _Loaded:
    from leka.compiler import build
    from leka.evaluator.graph_exec import load_graph
    from leka.runners import get_runner
    from leka.targets import get_target

    t0 = time.perf_counter()  # compile time = TVMScript parse + TVM build (source -> binary)
    mod = _parse(req["source"])
    is_graph = _check_signature(mod, req["args"])
    target = get_target(req["target"])
    try:
        art = build(mod, target)
    except Exception as e:
        raise _Stage("build", error_line(e)) from None
    info = {"compile_s": time.perf_counter() - t0, "build_s": getattr(art, "compile_s", None),
            "binary_bytes": getattr(art, "binary_bytes", None), "source_kind": getattr(art, "source_kind", None),
            "build_only": not target.runnable}
    if not target.runnable:
        return _Loaded(None, info)
    try:
        loaded = load_graph(art, target, req["args"]) if is_graph else get_runner(target).load(art)
        if hasattr(loaded, "prepare_timing"):  # compile the timing preproc now, not inside the timed request
            loaded.prepare_timing([i for i, a in enumerate(req["args"]) if a[3] == "output"])
    except Exception as e:
        raise _Stage("load", error_line(e), "runtime_error") from None
    return _Loaded(loaded, info)


def _fill(spec: tuple, fill: str, rng: np.random.Generator) -> np.ndarray:
    _name, shape, dtype, _role = spec
    dt = np.dtype(dtype)
    if fill == "nan" and dt.kind == "f":
        return np.full(shape, np.nan, dtype=dt)
    # Random garbage: an element the kernel does not write will not match the reference.
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 1e3 + 7.0).astype(dt)
    info = np.iinfo(dt) if dt.kind in "iu" else None
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dt) if info else np.ones(shape, dt)


def _run_trials(loaded: _Loaded, req: dict[str, Any]) -> dict[str, Any]:
    args = req["args"]
    outs_spec = [a for a in args if a[3] == "output"]
    results = []
    rng = np.random.default_rng(req.get("seed", 0) + 99)
    for trial, fill in zip(req["trials"], req["fills"]):
        arrays = list(trial) + [_fill(s, fill, rng) for s in outs_spec]
        loaded.exec.upload(arrays)
        loaded.exec.run()
        got = loaded.exec.download()
        n_in = len(trial)
        results.append({"inputs_after": got[:n_in], "outputs": got[n_in:]})
    return {"ok": True, "trials": results}


def _arm(side: _Loaded, req: dict[str, Any]) -> None:
    """Upload the request's timing inputs (and poisoned outputs) to one side. From here every timed run is
    preceded (untimed) by the runner's preproc: outputs poisoned, inputs a fresh mix of these and their
    alternate (leka.runners.poison); warm-ups see the alternate inputs."""
    from leka.runners.poison import array

    args, trial = req["args"], [np.asarray(a) for a in req["timing_inputs"]]
    outs_spec = [a for a in args if a[3] == "output"]
    side.exec.upload(trial + [array(s[1], s[2]) for s in outs_spec])
    if hasattr(side.exec, "arm"):
        side.exec.arm(list(range(len(trial), len(trial) + len(outs_spec))))


def _calibrate(side: _Loaded, req: dict[str, Any]) -> dict[str, Any]:
    """`n` timed runs of one side, armed first when asked: the parent times the request on its own clock to size
    the rounds (leka.evaluator.calibrate); n = 0 measures the request's own overhead."""
    if req.get("arm"):
        _arm(side, req)
    if int(req["n"]) > 0:
        side.exec.time(int(req["n"]))
    return {"ok": True}


def _time(cand: _Loaded, base: _Loaded, req: dict[str, Any]) -> dict[str, Any]:
    from leka.evaluator.timing import alternate

    trial = req["timing_inputs"]
    for side in (cand, base):
        _arm(side, req)
    timed = alternate(cand.exec, base.exec, **req["timing"])
    # One more timed run whose preproc restores the parent's inputs: its outputs and inputs are what the
    # parent checks against the reference of those inputs.
    cand.exec.time(1, final=True)
    after = cand.exec.download()
    return {"ok": True, **timed, "outputs_after": after[len(trial):], "inputs_after": after[:len(trial)],
            "timed_checks": _timed_checks(cand)}


def _timed_checks(side: _Loaded) -> list[dict[str, Any]]:
    """Timed runs of the candidate picked at random after they ran (leka.runners.poison.CHECK_SLOTS): the
    inputs each was given and what it left, for the parent to check. Runners without that preproc send none."""
    preproc = getattr(side.exec, "preproc", None)
    return preproc.checked_runs() if preproc is not None and hasattr(preproc, "checked_runs") else []


def _cpu_budget(seconds: float | None) -> None:
    """Lower the soft RLIMIT_CPU to the CPU time used so far plus this request's budget (SIGXCPU past it)."""
    if not seconds:
        return
    ru = resource.getrusage(resource.RUSAGE_SELF)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = int(ru.ru_utime + ru.ru_stime + seconds) + 1
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    except (ValueError, OSError):
        pass


def serve(fd_in: int, fd_out: int, handle: Any = None) -> None:
    """Answer requests until the parent closes the request pipe; `handle(req, cache)` answers one (default:
    this worker's ops; leka.runners.rpc_build serves builds for remote devices with this loop)."""
    from leka.evaluator.wire import WireError, read_frame, write_frame

    import tvm  # noqa: F401  (import cost paid once per worker)

    cache: dict[str, _Loaded] = {}
    while True:
        try:
            req = read_frame(fd_in)
        except EOFError:
            return
        _cpu_budget(req.pop("cpu_budget_s", None))
        try:
            reply = (handle or _handle)(req, cache)
        except _Stage as s:
            reply = {"ok": False, "kind": s.kind, "stage": s.stage, "error": str(s)}
        except MemoryError:
            reply = {"ok": False, "kind": "crash", "stage": req.get("op"), "error": "out of memory (worker limit)"}
        except Exception as e:
            traceback.print_exc()
            reply = {"ok": False, "kind": "runtime_error", "stage": req.get("op"), "error": error_line(e)}
        try:
            write_frame(fd_out, reply)
        except WireError as e:  # e.g. an output dtype the wire does not carry
            write_frame(fd_out, {"ok": False, "kind": "runtime_error", "stage": req.get("op"),
                                 "error": f"reply not sendable: {e}"})


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m leka.evaluator.worker")
    ap.add_argument("--in", dest="fd_in", type=int, required=True, help="fd of the request pipe")
    ap.add_argument("--out", dest="fd_out", type=int, required=True, help="fd of the reply pipe")
    a = ap.parse_args(argv)
    cast(io.TextIOWrapper, sys.stdout).reconfigure(line_buffering=True)  # the log is read for crash reports
    serve(a.fd_in, a.fd_out)


def _handle(req: dict[str, Any], cache: dict[str, _Loaded]) -> dict[str, Any]:
    op = req["op"]
    if op == "ping":
        import tvm

        return {"ok": True, "pid": os.getpid(), "threads": int(tvm.get_global_func("runtime.NumThreads")())}
    if op == "load":  # parse + signature + build (+ load when runnable); cached by key
        key = req["key"]
        if key not in cache:
            if len(cache) > 16:  # keep memory bounded in long runs
                cache.pop(next(iter(cache)))
            cache[key] = _load(req)
        return {"ok": True, **cache[key].info}
    if op == "run":
        try:
            return _run_trials(cache[req["key"]], req)
        except _Stage:
            raise
        except Exception as e:
            raise _Stage("run", error_line(e), "runtime_error") from None
    if op == "time":
        try:
            return _time(cache[req["key"]], cache[req["baseline_key"]], req)
        except Exception as e:
            raise _Stage("timing", error_line(e), "runtime_error") from None
    if op == "calibrate":
        try:
            return _calibrate(cache[req["key"]], req)
        except Exception as e:
            raise _Stage("timing", error_line(e), "runtime_error") from None
    if op == "drop":
        cache.pop(req["key"], None)
        return {"ok": True}
    raise ValueError(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
