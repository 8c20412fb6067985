"""MetaSchedule in its own process (`python -m baselines.ms_worker REQUEST.json`): TVM's tuner can hang or
crash the interpreter (see /work/shared/TVM_0_27_NOTES.md), and the parent must be able to stop it at
the budget's wall-time limit and still read the best schedule from the JSON database.

Request: {"module": TVMScript of the IRModule to tune, "target": TVM target dict, "work_dir", "trials"
(0 = only pick the best from an existing database), "builder_timeout_s", "runner_timeout_s",
"builder_workers", "seed"}. Writes RESULT.json beside the request: {"trials": records in the database,
"script": the best schedule's PrimFunc as TVMScript or null, "tune_s"}.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def count_records(work_dir: Path) -> int:
    """Tuning records (one per measured candidate) in MetaSchedule's JSON database."""
    path = work_dir / "database_tuning_record.json"
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.is_file() else 0


def _tune(mod: Any, target: Any, req: dict[str, Any]) -> None:
    from tvm.s_tir import meta_schedule as ms

    builder = ms.builder.LocalBuilder(max_workers=int(req["builder_workers"]),
                                      timeout_sec=float(req["builder_timeout_s"]))
    runner = ms.runner.LocalRunner(timeout_sec=float(req["runner_timeout_s"]),
                                   evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=50))
    ms.tune_tir(mod=mod, target=target, work_dir=req["work_dir"], max_trials_global=int(req["trials"]),
                num_trials_per_iter=min(32, int(req["trials"])), builder=builder, runner=runner,
                cost_model="xgb", seed=int(req.get("seed", 0)), num_tuning_cores=int(req["builder_workers"]))


def run(req: dict[str, Any]) -> dict[str, Any]:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    mod = tvm.script.from_source(req["module"])
    target = tvm.target.Target(req["target"])
    work_dir = Path(req["work_dir"])
    t0 = time.perf_counter()
    if int(req["trials"]) > 0:
        _tune(mod, target, req)
    tune_s = time.perf_counter() - t0
    script = None
    if count_records(work_dir):
        db = ms.database.JSONDatabase(work_dir=str(work_dir))
        sch = ms.tir_integration.compile_tir(db, mod, target)
        if sch is not None:
            func = sch.mod["main"].with_attr("global_symbol", "main")
            script = tvm.tirx.transform.ConvertSSA()(tvm.IRModule({"main": func}))["main"].script()
    return {"trials": count_records(work_dir), "script": script, "tune_s": tune_s}


def main() -> int:
    req_path = Path(sys.argv[1])
    out = run(json.loads(req_path.read_text()))
    req_path.with_name("RESULT.json").write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
