"""Experiments: declarative configs (methods x options x targets x split x budget), one runner over the
suite's bench runner and store, the paper's tables, and per-layer prompt tuning (docs/benchmark.md)."""
from .config import ConfigError, ExperimentConfig, load_config
from .runner import run_experiment

__all__ = ["ConfigError", "ExperimentConfig", "load_config", "run_experiment"]
