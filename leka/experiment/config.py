"""Declarative experiment configs (TOML or JSON): methods x options x targets x split x budget.

    name = "ablation_host_cpu"
    split = "test"                 # dev | test | v1:test (benchmark/splits/)
    targets = ["host-cpu"]
    levels = [1, 2]                # optional filter
    limit = 8                      # task cap per target: a prefix of the split order (round-robin over domains)
    samples = 1                    # attempts per task (n of Correct@k)
    trials = 3                     # correctness trials per evaluation
    budget = "compiles=6,measurements=6,minutes=3"   # per attempt (task x sample), the same for every method

    [[method]]
    label = "leka-schedule-only"   # the row name in the tables (default: the method name)
    method = "leka"
    options = { layers = "schedule" }

    [prompt_tuning]                # optional: choose each layer's prompt variant on the dev split
    label = "leka"                 # the method entry to tune (needs a model: --llm)
    layers = ["schedule"]
    variants = ["v1", "v2"]
    dev_limit = 4

Every problem is a one-line LekaError (exit 2): malformed file, unknown key, missing split or target,
unknown method or option (checked by building each method once).
"""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leka.errors import LekaError

TOP_KEYS = {"name", "split", "targets", "levels", "limit", "samples", "trials", "budget", "run_budget", "method",
            "prompt_tuning", "description"}
METHOD_KEYS = {"label", "method", "options"}
TUNING_KEYS = {"label", "layers", "variants", "dev_limit"}
# Methods that take no model: --llm leaves them alone.
NO_MODEL_METHODS = frozenset({"metaschedule", "tvm-naive", "tvm-dlight", "onnxruntime"})
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class ConfigError(LekaError):
    pass


@dataclass(frozen=True)
class MethodEntry:
    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PromptTuning:
    label: str
    layers: tuple[str, ...]
    variants: tuple[str, ...]
    dev_limit: int | None = None


@dataclass(frozen=True)
class ExperimentConfig:
    name: str
    split: str
    targets: tuple[str, ...]
    methods: tuple[MethodEntry, ...]
    budget: str = ""
    run_budget: str = ""
    levels: tuple[int, ...] = (1, 2)
    limit: int | None = None
    samples: int = 1
    trials: int = 3
    tuning: PromptTuning | None = None
    path: str = ""

    def entry(self, label: str) -> MethodEntry:
        for m in self.methods:
            if m.label == label:
                return m
        raise ConfigError(f"{self.path}: no method entry labelled {label!r}")

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("name", "split", "targets", "budget", "run_budget", "levels", "limit",
                                           "samples", "trials")}
        d["methods"] = [m.__dict__ for m in self.methods]
        d["prompt_tuning"] = self.tuning.__dict__ if self.tuning else None
        return json.loads(json.dumps(d))


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"experiment config {path}: no such file")
    text = path.read_text()
    try:
        return json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"experiment config {path} is malformed: {str(e).splitlines()[0]}") from None


def _unknown(where: str, d: dict[str, Any], known: set[str]) -> None:
    bad = sorted(set(d) - known)
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")


def _int(where: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{where} must be a whole number >= {low}, got {value!r}")
    return value


def _levels(path: Path, raw: Any) -> tuple[int, ...]:
    if not isinstance(raw, list) or not raw or any(v not in (1, 2, 3) or isinstance(v, bool) for v in raw):
        raise ConfigError(f"{path}: levels must be a list of 1, 2 and/or 3, got {raw!r}")
    return tuple(raw)


def _methods(path: Path, raw: Any) -> tuple[MethodEntry, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{path}: needs at least one [[method]] entry")
    out = []
    for i, m in enumerate(raw):
        where = f"{path}: method entry {i + 1}"
        if not isinstance(m, dict) or not isinstance(m.get("method"), str):
            raise ConfigError(f"{where}: needs method = \"NAME\"")
        _unknown(where, m, METHOD_KEYS)
        label = str(m.get("label") or m["method"])
        if not _NAME.match(label):
            raise ConfigError(f"{where}: label {label!r} may hold letters, digits, '_', '.', '-' only")
        if not isinstance(m.get("options", {}), dict):
            raise ConfigError(f"{where}: options must be a table")
        out.append(MethodEntry(label, m["method"], dict(m.get("options", {}))))
    labels = [m.label for m in out]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{path}: method labels must be unique, got {labels}")
    return tuple(out)


def _tuning(path: Path, raw: Any) -> PromptTuning | None:
    if raw is None:
        return None
    where = f"{path}: [prompt_tuning]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    _unknown(where, raw, TUNING_KEYS)
    layers, variants = raw.get("layers") or [], raw.get("variants") or []
    if not layers or not all(x in ("algorithm", "schedule", "memory") for x in layers):
        raise ConfigError(f"{where}: layers must list algorithm, schedule and/or memory")
    if len(variants) < 2:
        raise ConfigError(f"{where}: variants must list at least two prompt variants (e.g. [\"v1\", \"v2\"])")
    limit = raw.get("dev_limit")
    return PromptTuning(str(raw.get("label", "leka")), tuple(layers), tuple(map(str, variants)),
                        _int(f"{where} dev_limit", limit, 1) if limit is not None else None)


def load_config(path: str | Path) -> ExperimentConfig:
    """Parse and check a config (structure, split, targets); methods are checked by `check_methods`."""
    from leka.bench.splits import parse_split, load_split_file
    from leka.targets import get_target

    path = Path(path)
    raw = _read(path)
    _unknown(str(path), raw, TOP_KEYS)
    for key in ("name", "split", "targets"):
        if key not in raw:
            raise ConfigError(f"{path}: missing key {key!r}")
    name = str(raw["name"])
    if not _NAME.match(name):
        raise ConfigError(f"{path}: name {name!r} may hold letters, digits, '_', '.', '-' only")
    version, _ = parse_split(raw["split"])
    load_split_file(version)
    targets = raw["targets"] if isinstance(raw["targets"], list) else [raw["targets"]]
    for t in targets:
        try:
            get_target(t)
        except LekaError as e:
            raise ConfigError(f"{path}: target {t!r}: {e}") from None
    cfg = ExperimentConfig(
        name=name, split=str(raw["split"]), targets=tuple(map(str, targets)), methods=_methods(path, raw.get("method")),
        budget=str(raw.get("budget", "")), run_budget=str(raw.get("run_budget", "")),
        levels=_levels(path, raw.get("levels", [1, 2])),
        limit=_int(f"{path}: limit", raw["limit"], 1) if raw.get("limit") is not None else None,
        samples=_int(f"{path}: samples", raw.get("samples", 1), 1), trials=_int(f"{path}: trials", raw.get("trials", 3), 1),
        tuning=_tuning(path, raw.get("prompt_tuning")), path=str(path))
    from leka.budget import Budget

    Budget.parse(cfg.budget)
    Budget.parse(cfg.run_budget)
    if cfg.tuning is not None:
        cfg.entry(cfg.tuning.label)
    return cfg


def method_options(entry: MethodEntry, cfg: ExperimentConfig, llm: str | None, base_url: str | None) -> dict[str, Any]:
    """The options a method entry runs with: its own, the per-attempt budget, and the model (--llm) unless
    the entry names its own proposer."""
    from leka.methods.options import ATTEMPT_BUDGET

    opts = dict(entry.options)
    if cfg.budget and ATTEMPT_BUDGET not in opts:
        opts[ATTEMPT_BUDGET] = cfg.budget
    # An entry that names its own proposer (llm = "offline", or a pick control) keeps it under --llm.
    if llm and entry.method not in NO_MODEL_METHODS and "llm" not in opts and "pick" not in opts:
        opts["llm"] = llm
        if base_url:
            opts["base_url"] = base_url
    return opts


def check_methods(cfg: ExperimentConfig, llm: str | None, base_url: str | None) -> None:
    """Build every method once: an unknown method or option fails here, before anything runs."""
    from leka.methods import get_method

    for entry in cfg.methods:
        try:
            get_method(entry.method, method_options(entry, cfg, llm, base_url))
        except LekaError as e:
            raise ConfigError(f"{cfg.path}: method entry {entry.label!r}: {e}") from None
