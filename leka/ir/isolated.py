"""Parse and apply untrusted algorithm text (a model's TVMScript) in a subprocess.

TVMScript parsing evaluates parts of the text, so text that did not come from the package's own
rewrites is never parsed in the calling process: ``run_isolated`` starts ``python -m leka.ir.isolated``,
which parses, applies the schedule/memory layers and answers with JSON.
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from .errors import IRApplyError


def parse_algorithm(text: str, task: Any) -> Any:
    """TVMScript text -> PrimFunc 'main' with the task's signature. The text goes through the TVMScript
    allow-list and the builtin-free parser (leka.evaluator.safe_parse) whether or not the package wrote
    it; untrusted text is still parsed only in a subprocess (run_isolated) or the evaluation worker."""
    import tvm

    from leka.evaluator.safe_parse import ScriptParseError, safe_from_source
    from leka.evaluator.script_guard import ScriptRejected

    from .checks import check_signature

    try:
        obj = safe_from_source(text)
    except ScriptParseError as e:
        raise IRApplyError(f"algorithm text does not parse: {str(e).removeprefix('not valid TVMScript: ')}") \
            from None
    except ScriptRejected as e:
        raise IRApplyError(f"algorithm text rejected: {e}") from None
    if isinstance(obj, tvm.IRModule):
        names = [gv.name_hint for gv in obj.functions]
        if "main" not in names:
            raise IRApplyError(f"algorithm module has no function named main (found: {', '.join(names)})")
        obj = obj["main"]
    if not isinstance(obj, tvm.tirx.PrimFunc):
        raise IRApplyError(f"algorithm text must define a PrimFunc, got {type(obj).__name__}")
    errs = check_signature(obj, task)
    if errs:
        raise IRApplyError("algorithm signature: " + "; ".join(errs))
    return obj.with_attr("global_symbol", "main")


def run_isolated(op: str, ir: Any, target: Any, timeout_s: float = 120.0) -> dict[str, Any]:
    """op "validate" -> {"errors": [...]}; op "flat" -> {"errors": [...], "script": str}."""
    from leka.targets import get_target

    from .checks import task_args

    payload = {"op": op, "ir": ir.to_json(), "args": [[n, list(s), d] for n, s, d in task_args(ir._task())],
               "target": get_target(target).to_json()}
    try:
        proc = subprocess.run([sys.executable, "-m", "leka.ir.isolated"], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"errors": [f"parsing the algorithm text took longer than {timeout_s:.0f} s"], "script": ""}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"errors": [f"the algorithm worker failed (exit {proc.returncode}): {tail[:300]}"], "script": ""}
    return json.loads(lines[-1])


def _worker() -> None:
    from leka.targets import TargetPreset

    from .candidate import CandidateIR
    from .checks import check_scheduled
    from .layers import func_script

    req = json.loads(sys.stdin.read())
    args = [(n, tuple(s), d) for n, s, d in req["args"]]
    target = TargetPreset(**req["target"])
    ir = CandidateIR.from_json(req["ir"])
    out: dict[str, Any] = {"errors": [], "script": ""}
    try:
        func = parse_algorithm(ir.algorithm.text, args)
        live = ir.apply(func)
        out["errors"] = check_scheduled(live, args, target)
        if req["op"] == "flat" and not out["errors"]:
            out["script"] = func_script(live.sch.mod["main"].with_attr("global_symbol", "main"))
    except IRApplyError as e:
        out["errors"] = [str(e)]
    print(json.dumps(out))


if __name__ == "__main__":
    _worker()
