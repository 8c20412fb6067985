"""`leka experiment run CONFIG`: every (method entry x target) of a config as one bench run of the suite's
runner (leka.bench.runner.run_benchmark) into the suite's SQLite store, then the tables and report.

Run ids are derived from the config (`exp.NAME.LABEL.TARGET`), so `--resume` finds the runs of a killed
experiment and the bench runner skips every finished (task, sample): no sample is repeated. With an executor
(`--executor ray`) every (method, task, sample) of the main table is one job of one fan-out
(leka.executors.fanout.run_fanouts), written to its run as it comes back; the same keys make resume exact. No paid model
call is repeated either: LEKA's agent journals proposals, codeloop journals tool results, and every
model client goes through the response cache (.leka/llm_cache.sqlite), which answers a repeated prompt
without a request and without charging the budget.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from leka.errors import LekaError

from .config import ExperimentConfig, MethodEntry, check_methods, method_options


DEFAULT_PROMPTS = "-default-prompts"  # the tuned entry's row with the default prompts, run beside the choice


@dataclass
class PlannedRun:
    run_id: str
    label: str
    method: str
    target: str
    split: str
    options: dict[str, Any]
    limit: int | None
    stage: str = "main"  # "main" | "tuning"
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the prompt variant a tuning run tries


def run_id_for(cfg: ExperimentConfig, label: str, target: str, stage: str = "main") -> str:
    return f"exp.{cfg.name}.{label}.{target}" if stage == "main" else f"exp.{cfg.name}.{stage}.{label}.{target}"


def select(cfg: ExperimentConfig, split: str, limit: int | None) -> list[Any]:
    from leka.bench.splits import split_tasks

    tasks = [t for t in split_tasks(split) if t.level in cfg.levels]
    return tasks[:limit] if limit else tasks


class ExperimentRunner:
    """Runs planned bench runs against one store; one evaluator worker per target, shared by methods."""

    def __init__(self, cfg: ExperimentConfig, store: Any, *, resume: bool, llm: str | None = None,
                 base_url: str | None = None, say: Callable[[str], None] | None = None,
                 executor: Any = None) -> None:
        self.cfg, self.store, self.resume = cfg, store, resume
        self.llm, self.base_url = llm, base_url
        self.executor = executor  # a leka.executors executor; None: samples run here (run_benchmark)
        self.say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._evaluators: dict[str, Any] = {}
        self.existing = {r["run_id"] for r in store.list_runs()}

    def close(self) -> None:
        for ev in self._evaluators.values():
            ev.close()
        self._evaluators.clear()

    def plan(self, entry: MethodEntry, target: str, *, stage: str = "main", split: str | None = None,
             limit: int | None = None, label: str | None = None, extra_options: dict[str, Any] | None = None,
             extra: dict[str, Any] | None = None) -> PlannedRun:
        opts = method_options(entry, self.cfg, self.llm, self.base_url)
        opts.update(extra_options or {})
        label = label or entry.label
        return PlannedRun(run_id_for(self.cfg, label, target, stage), label, entry.method, target,
                          split or self.cfg.split, opts, limit if limit is not None else self.cfg.limit, stage,
                          dict(extra or {}))

    def check_fresh(self, planned: list[PlannedRun]) -> None:
        clash = [p.run_id for p in planned if p.run_id in self.existing]
        if clash and not self.resume:
            raise LekaError(f"experiment {self.cfg.name} already has run(s) {', '.join(clash[:3])} in "
                            f"{self.store.path}; continue with --resume, or use another --store")

    def _evaluator(self, target: Any) -> Any:
        from leka.evaluator import EvalConfig, Evaluator

        if target.name not in self._evaluators:
            self._evaluators[target.name] = Evaluator(target, EvalConfig(trials=self.cfg.trials, measure=True))
        return self._evaluators[target.name]

    def execute(self, p: PlannedRun) -> list[dict[str, Any]]:
        """Run (or resume) one planned bench run; returns its stored samples."""
        from leka.bench.runner import run_benchmark
        from leka.budget import Budget

        if self.executor is not None:
            self.fan_out([p])
            return self.store.samples(p.run_id)
        from leka.executors.progress import FanoutProgress

        target, tasks, method = self._open(p)
        with FanoutProgress(len(tasks) * self.cfg.samples, len(self.store.finished_keys(p.run_id))) as prog:
            out = run_benchmark(self.store, p.run_id, tasks, target, method, self.cfg.samples,
                                self._evaluator(target), Budget.parse(self.cfg.run_budget), p.options,
                                on_outcome=prog.update, on_event=prog.event)
        self._said(p, out)
        return self.store.samples(p.run_id)

    def fan_out(self, planned: list[PlannedRun]) -> None:
        """Run (or resume) planned runs on the executor: all their missing samples as one batch of jobs."""
        from leka.executors.fanout import FanoutRun, run_fanouts
        from leka.executors.progress import FanoutProgress

        runs = []
        for p in planned:
            _target, tasks, method = self._open(p)
            runs.append(FanoutRun(p.run_id, tasks, method, self.cfg.samples, p.options,
                                  {"target_spec": p.target, "trials": self.cfg.trials, "measure": True}))
        total = sum(len(r.tasks) * r.samples for r in runs)
        stored = sum(len(self.store.finished_keys(r.run_id)) for r in runs)
        with FanoutProgress(total, stored) as prog:
            outs = run_fanouts(self.store, runs, self.executor, on_outcome=prog.update, on_event=prog.event)
        for p in planned:
            self._said(p, outs[p.run_id])

    def _open(self, p: PlannedRun) -> tuple[Any, list[Any], Any]:
        """(target, tasks, method) of a planned run, the run created in the store or marked resumed."""
        from leka.evaluator import versions
        from leka.methods import get_method
        from leka.targets import get_target

        target = get_target(p.target)
        if not target.runnable:
            raise LekaError(f"target {p.target} is not runnable here: {target.why_not_runnable}")
        tasks = select(self.cfg, p.split, p.limit)
        if not tasks:
            raise LekaError(f"split {p.split} with levels {list(self.cfg.levels)} selects no task")
        method = get_method(p.method, p.options)
        if p.run_id not in self.existing:
            cfg = {"selection": {"split": p.split, "limit": p.limit, "levels": list(self.cfg.levels)},
                   "task_ids": [t.id for t in tasks], "task_paths": [], "target_spec": p.target,
                   "target": target.to_json(), "samples": self.cfg.samples, "options": p.options,
                   "budget": self.cfg.run_budget, "trials": self.cfg.trials, "measure": True,
                   "experiment": {"name": self.cfg.name, "label": p.label, "stage": p.stage, **p.extra},
                   "argv": sys.argv[1:]}
            self.store.create_run(p.method, target.name, cfg, versions(), run_id=p.run_id)
            self.existing.add(p.run_id)
        else:
            self.store.add_event(p.run_id, "resumed", {"finished": len(self.store.finished_keys(p.run_id))})
        self.say(f"experiment {self.cfg.name}: {p.run_id} ({p.method} {p.options}) on {len(tasks)} tasks")
        return target, tasks, method

    def _said(self, p: PlannedRun, out: Any) -> None:
        self.say(f"  {p.run_id}: {out.done} new samples, {out.skipped_finished} already done, {out.wall_s:.0f} s"
                 + (f"; stopped: {out.stopped}" if out.stopped else ""))


def run_experiment(cfg: ExperimentConfig, store: Any, *, resume: bool = False, llm: str | None = None,
                   base_url: str | None = None, say: Callable[[str], None] | None = None,
                   executor: Any = None) -> dict[str, Any]:
    """Run the whole config (its samples on `executor` when given); returns {"runs": [PlannedRun...],
    "tuning": tuning result or None}."""
    from .tuning import tune_prompts

    check_methods(cfg, llm, base_url)
    if executor is not None and cfg.run_budget:
        raise LekaError(f"--executor {executor.name} takes no run_budget (config {cfg.name}): a run budget is one "
                        "accountant, and the executor's samples run apart; the per-attempt budget applies")
    runner = ExperimentRunner(cfg, store, resume=resume, llm=llm, base_url=base_url, say=say, executor=executor)
    try:
        chosen: dict[str, dict[str, str]] = {}
        tuning = None
        if cfg.tuning is not None:
            tuning = tune_prompts(runner)
            chosen = tuning["chosen"]
        planned = []
        for target in cfg.targets:
            for entry in cfg.methods:
                if cfg.tuning and entry.label == cfg.tuning.label:  # the chosen prompts beside the defaults
                    extra = {"prompts": chosen[target]}
                    planned.append(runner.plan(entry, target, extra_options=extra, extra=extra))
                    planned.append(runner.plan(entry, target, label=f"{entry.label}{DEFAULT_PROMPTS}"))
                else:
                    planned.append(runner.plan(entry, target))
        runner.check_fresh(planned)
        if executor is not None:  # the whole table at once: the cluster works on every method's samples
            runner.fan_out(planned)
        else:
            for p in planned:
                runner.execute(p)
        return {"runs": planned, "tuning": tuning}
    finally:
        runner.close()
