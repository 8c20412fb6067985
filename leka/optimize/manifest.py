"""manifest.json of an artifact: the model, the target, each kernel's decision and how it was made, the budget
(its spec, what was spent, how it ended), the end-to-end latency and the verification."""
from __future__ import annotations

import time
from typing import Any

from .artifact import FORMAT, LIBRARY
from .db import Winner
from .profile import KernelProfile
from .rounds import decided_how, spent_in


def _budget_spec(opts: Any) -> str:
    if opts.remote:
        return f"remote rounds: {opts.remote_steps} search step(s) per kernel + the final re-measure"
    return opts.budget or ""


def _decision(p: KernelProfile, w: Winner | None, run_id: str) -> str:
    """What became of the kernel: not tuned (why), tuned now, reused from the db, or a db entry searched further
    (continued) whose earlier winner stayed the fastest."""
    if w is None:
        return f"not tuned ({'the quick pass ran out of time' if p.quick else p.why_not})"
    if w.detail.get("skipped") and not w.source:
        return f"not tuned ({w.detail['skipped'].removeprefix('budget: ')})"
    how = "tuned" if w.run_id == run_id else "reused from db"
    if w.detail.get("continued_in") == run_id:
        how = ("tuned (searched again in a later round; the first answer stayed fastest)" if w.run_id == run_id
               else "continued (db entry searched further; the earlier winner stayed fastest)")
    return how + (": replaced" if w.source else ": default kept")


def build_manifest(opts: Any, loaded: Any, profs: list[KernelProfile], decisions: dict[str, Winner],
                   preset: Any, run_id: str, whole: Any, result: dict[str, Any], verification: dict[str, Any],
                   t0: float, ended: str) -> dict[str, Any]:
    from leka.evaluator import versions

    from .pipeline import _threads, build_only_why

    kernels: list[dict[str, Any]] = []
    spent: dict[str, float] = {}
    for p in profs:
        w = decisions.get(p.spec.key)
        for kind, v in (spent_in(w, run_id) if w else {}).items():
            if isinstance(v, (int, float)):
                spent[kind] = spent.get(kind, 0) + v
        kernels.append({**p.to_json(), "decision": _decision(p, w, run_id), "speedup": w.speedup if w else None,
                        "how": decided_how(w) if w else None,
                        "candidate_ms": w.candidate_ms if w else None, "method": w.method if w else None,
                        "baseline": w.detail.get("baseline") if w else None,
                        "agent_run": w.agent_run if w else None, "tuned_in_run": w.run_id if w else None,
                        "detail": w.detail if w else {}})
    return {"format": FORMAT, "library": LIBRARY, "run_id": run_id, "method": opts.method, "llm": opts.llm,
            "model": {"path": loaded.path, "sha256": loaded.sha256, "opset": loaded.opset},
            "target": {"name": preset.name, "family": preset.family, "tvm": preset.target,
                       "runnable_here": preset.runnable, "device": {"cpu": "cpu"}.get(preset.family, preset.family)},
            "inputs": [i.to_json() for i in loaded.inputs],
            "outputs": [{"name": n} for n in loaded.outputs], "versions": versions(),
            "kernels": kernels, "budget": {"spec": _budget_spec(opts), "limits": whole.limits, "spent": spent,
                                           "spent_summary": ", ".join(f"{k}={v:.4g}" for k, v in spent.items() if v)
                                           or "nothing", "ended": ended},
            "build_s": result.get("build_s"), "latency": result.get("latency"),
            "latency_host": result.get("latency_host"), "latency_threads": _threads(preset),
            "references_failed": result.get("references_failed", {}),  # comparison builds that did not build
            "latency_cut": result.get("latency_cut"),  # why there is no end-to-end comparison, when it was cut
            "prepacked": result.get("prepacked", []),  # kernels whose weight packing ran at build time (prepack.py)
            "verification": verification, "wall_s": time.monotonic() - t0,
            "tuning_note": None if preset.runnable or opts.remote else f"kernels not tuned: {build_only_why(preset)}"}
