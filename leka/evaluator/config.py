"""Evaluation settings: correctness trials, timing protocol and worker limits."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from leka.tasks.task import FLOAT_DISTS, HOLDOUT_DISTS, KNOWN_DISTS


@dataclass(frozen=True)
class EvalConfig:
    trials: int = 5  # fresh random inputs per trial, cycling through `dists`
    # A task whose arguments hold big_args_bytes or more gets at most big_trials trials: each trial's inputs are
    # drawn, run through the reference and sent to the worker and back whole (the inputs-unchanged check), and
    # light_vgg19's first fully connected layer (411 MB of weights) spent ~90 of its 126 s evaluation on its 6 input
    # sets; a trial of 100M random elements checks as much as several small ones (the timing loop's own inputs and
    # its checked runs come on top)
    big_args_bytes: int = 64 << 20
    big_trials: int = 2
    dists: tuple[str, ...] = ("normal", "heavy", "uniform", "mixed-scale", "normal")
    # None: every evaluation draws its inputs from a fresh random seed (recorded as EvalResult.input_seed);
    # a number pins it, to replay an evaluation on exactly the inputs it had.
    seed: int | None = None
    # Judging, not searching: add trials on the held-back input families (HOLDOUT_DISTS), whose mismatches
    # are reported without values. `leka eval`, bench samples and the agent's finalize set it; search feedback
    # never does.
    holdout: bool = False
    holdout_dists: tuple[str, ...] = HOLDOUT_DISTS
    measure: bool = True  # time candidate vs baseline (only when correct)
    warmup: int = 2  # untimed runs of each side before the rounds
    min_rounds: int = 7  # alternating candidate/baseline timing rounds
    max_rounds: int = 40
    min_time_s: float = 0.08  # per side, across rounds: rounds continue until both sides reach it
    min_run_ms: float = 2.0  # one round repeats a kernel `number` times so each round lasts at least this
    # A pair with a side whose one run takes at least slow_run_s (a default build of a large layer: light_vgg19's
    # 224x224 convolutions, ~2 s a call) is timed over slow_min_rounds rounds, the other side's rounds sized to
    # reach min_time_s in them, with no warm-up (calibration's runs warmed both): each round of the slow side
    # costs a second run (time_evaluator's untimed first call), and 7 rounds and a warm-up made 16 of the ~26
    # default-build runs of each of its evaluations (a 0.5 s one ran 18 rounds for a 4.6 ms candidate's time).
    slow_run_s: float = 0.1
    slow_min_rounds: int = 3
    compile_timeout_s: float = 120.0
    run_timeout_s: float = 60.0  # correctness trials or the timing loop, each
    mem_limit_gb: float = 8.0  # RLIMIT_AS of the worker: a memory blow-up becomes a recorded crash
    threads: int | None = None  # CPU thread pool of the worker; None: $TVM_NUM_THREADS, else the target's cores
    max_mismatches: int = 5  # first mismatches reported

    def __post_init__(self) -> None:
        bad = [d for d in self.dists if d not in FLOAT_DISTS]
        if bad:
            raise ValueError(f"unknown input distribution(s) {bad}; known: {FLOAT_DISTS}")
        bad = [d for d in self.holdout_dists if d not in KNOWN_DISTS]
        if bad:
            raise ValueError(f"unknown held-back distribution(s) {bad}; known: {KNOWN_DISTS}")
        if self.trials < 1 or self.big_trials < 1:
            raise ValueError("trials must be >= 1")
        if not 1 <= self.slow_min_rounds <= self.min_rounds:
            raise ValueError("slow_min_rounds must be in [1, min_rounds]")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise ValueError("seed must be in [0, 2**63)")

    def trials_for(self, args_bytes: int) -> int:
        """The correctness trials of a task whose arguments hold `args_bytes`."""
        return self.trials if args_bytes < self.big_args_bytes else min(self.trials, self.big_trials)

    def to_json(self) -> dict:
        return asdict(self)


# Failure kinds, in the order a candidate meets them.
FAILURES = ("compile_error", "runtime_error", "timeout", "crash", "wrong")
__all__ = ["EvalConfig", "FAILURES", "field"]
