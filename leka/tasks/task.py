"""The task format: one workload = a pattern at concrete shapes, dtype and layout.

A Task carries its TVM definition (a builder returning a PrimFunc whose parameters are the task's
args, inputs first then outputs, global_symbol "main"), a NumPy reference, input generators,
tolerances, FLOPs and bytes moved. Tasks are trusted code (the package's, or a user's folder passed
with --tasks); candidates are not, and never run in the evaluating process.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

LEVELS = (1, 2, 3)
DOMAINS = ("vision", "image-processing", "speech-audio", "nlp", "signal-processing", "robotics", "anomaly-detection")
# Input distributions: correctness trials cycle through several so a kernel tuned to one
# (e.g. mean(randn) ~ 0) cannot pass by accident.
FLOAT_DISTS = ("normal", "uniform", "heavy", "mixed-scale", "positive")
# Held-back distributions: used only when an evaluation judges (EvalConfig.holdout), never in the feedback a
# method's search sees, so a kernel fitted to the search's inputs meets data it was never shown.
# The structured ones arrange values along memory order (the last axis first, across rows): monotone runs
# (alternately ascending and descending), constant runs, alternating sides of the median. Independent draws
# almost never show such structure, so a kernel with a branch keyed on it (a "ghost branch": wrong only when the
# first channels increase) passes every other family. The first run starts at element 0 and is at least 8 long,
# so a branch keyed on the leading elements meets its structure in every trial.
STRUCTURED_DISTS = ("runs", "steps", "alternating")
HOLDOUT_DISTS = ("laplace", "spikes", "skewed") + STRUCTURED_DISTS
KNOWN_DISTS = FLOAT_DISTS + HOLDOUT_DISTS
INT_TOLERANCES = ("exact", "ties")
# Integer outputs rounded from a real value: an element may be off by one only where the exact (float64)
# pre-rounding value lies within TIE_EPS of a rounding boundary k + 0.5. float32 arithmetic in the kernel moves
# such values by ~1e-4 at most for 8-bit ranges.
TIE_EPS = 1e-3


@dataclass(frozen=True)
class ArgSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str = "input"  # "input" | "output"
    # For integer inputs: inclusive low / exclusive high of the values drawn (indices, int8 ranges).
    low: float | None = None
    high: float | None = None
    # Float inputs that must stay in a domain (log, sqrt, variance): "positive" forces it.
    dist: str | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def default_tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol_scale): atol = atol_scale * max|expected| of the trial (see docs/metrics.md)."""
    if not is_float(dtype):
        return 0.0, 0.0  # integers and booleans are exact
    if dtype in ("float16", "bfloat16"):
        return 1e-2, 1e-2
    return 1e-4, 1e-5


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


@dataclass
class Task:
    id: str
    pattern: str
    level: int
    domain: str
    args: tuple[ArgSpec, ...]
    build: Callable[[], Any]  # -> tvm.tirx.PrimFunc (unscheduled definition)
    reference: Callable[..., Any]  # numpy inputs -> output array or tuple of arrays (outputs order)
    flops: int
    bytes: int
    dtype: str = "float32"
    layout: str = ""
    description: str = ""
    rtol: float | None = None  # float outputs only: integer outputs are exact (see int_tolerance)
    atol: float | None = None  # atol_scale, multiplied by max|expected|; float outputs only
    # "exact" (default) or "ties": integer outputs may be off by one only at rounding ties, located by
    # `pre_rounding` (inputs -> the exact float64 value each integer output rounds, one per output, None for
    # outputs that are not rounded).
    int_tolerance: str = "exact"
    pre_rounding: Callable[..., Any] | None = None
    memory_budget_bytes: int | None = None
    # Optional custom generator: (rng, dist) -> list of input arrays in input order.
    make_inputs: Callable[[np.random.Generator, str], list[np.ndarray]] | None = None
    onnx_model: Callable[[], Any] | None = None  # -> onnx.ModelProto, when an ONNX form exists
    # Held-back families this task cannot take -> why: only where its definition is ill-conditioned on that
    # structure, so that even a correct float32 kernel (the naive lowering) misses the tolerance. Judging leaves
    # them out for this task (leka.evaluator.inputs.make_trials); experiments/holdout_families.py finds them.
    holdout_skip: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    source: str = "builtin"  # "builtin" or the user file it came from
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def inputs(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role == "input")

    def definition(self) -> Any:
        """`build()`, once per Task object: the rules re-read the definition for every candidate they sketch
        (a PrimFunc is immutable, so one serves them all; a TVMScript definition takes up to 0.4 s to parse)."""
        if "_definition" not in self.__dict__:
            self.__dict__["_definition"] = self.build()
        return self.__dict__["_definition"]

    @property
    def outputs(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role == "output")

    def __post_init__(self) -> None:
        if self.int_tolerance not in INT_TOLERANCES:
            raise ValueError(f"task {self.id}: int_tolerance {self.int_tolerance!r}; known: {INT_TOLERANCES}")
        if (self.int_tolerance == "ties") != (self.pre_rounding is not None):
            raise ValueError(f"task {self.id}: int_tolerance='ties' and pre_rounding go together")
        for fam, why in self.holdout_skip.items():
            if fam not in HOLDOUT_DISTS or not why.strip():
                raise ValueError(f"task {self.id}: holdout_skip needs held-back family names "
                                 f"({', '.join(HOLDOUT_DISTS)}) with a reason each, got {fam!r}")

    def tolerance(self, spec: ArgSpec | None = None) -> tuple[float, float]:
        """(rtol, atol_scale) of output `spec` (default: the first). Integer outputs are exact: the task's
        rtol/atol apply to float outputs; an integer task that needs +-1 says where (int_tolerance)."""
        dtype = (spec or self.outputs[0]).dtype
        rtol, atol = default_tolerance(dtype)
        if not is_float(dtype):
            return rtol, atol
        return (self.rtol if self.rtol is not None else rtol, self.atol if self.atol is not None else atol)

    def tie_masks(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray | None]:
        """Per output: where an integer element may be off by one (its exact value is a rounding tie), or
        None where the output must match exactly."""
        if self.int_tolerance != "ties" or self.pre_rounding is None:
            return [None] * len(self.outputs)
        vals = self.pre_rounding(*inputs)
        vals = list(vals) if isinstance(vals, (tuple, list)) else [vals]
        masks: list[np.ndarray | None] = []
        for v, spec in zip(vals, self.outputs, strict=True):
            if v is None:
                masks.append(None)
                continue
            v = np.asarray(v, dtype=np.float64).reshape(spec.shape)
            masks.append(np.abs(v - np.floor(v) - 0.5) <= TIE_EPS)
        return masks

    def generate_inputs(self, rng: np.random.Generator, dist: str) -> list[np.ndarray]:
        if self.make_inputs is not None:
            return [np.asarray(a, order="C") for a in self.make_inputs(rng, dist)]
        return [generate(a, rng, dist) for a in self.inputs]

    def run_reference(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = self.reference(*inputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [np.asarray(o).astype(spec.dtype, copy=False).reshape(spec.shape)
                for o, spec in zip(outs, self.outputs, strict=True)]

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "pattern": self.pattern, "level": self.level, "domain": self.domain,
                "dtype": self.dtype, "layout": self.layout, "flops": self.flops, "bytes": self.bytes,
                "args": [[a.name, list(a.shape), a.dtype, a.role] for a in self.args],
                "description": self.description, "source": self.source}


def generate(spec: ArgSpec, rng: np.random.Generator, dist: str) -> np.ndarray:
    """Draw one input array from distribution `dist` (see FLOAT_DISTS)."""
    dt = np.dtype(spec.dtype)
    shape = spec.shape
    if dist in STRUCTURED_DISTS and dt.kind != "b":
        return _structured(spec, rng, dist)
    if dt.kind in "iu":
        lo, hi = _int_range(spec, dt)
        ints = rng.integers(lo, hi, size=shape, dtype=np.int64)
        if dist == "spikes":  # a tenth of the elements at the ends of the range: saturation paths
            ints = np.where(rng.random(shape) < 0.1, rng.choice([lo, hi - 1], size=shape), ints)
        elif dist == "skewed":  # most values near the low end of the range
            ints = lo + np.floor(rng.random(shape) ** 3 * (hi - lo)).astype(np.int64)
        return ints.astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    d = spec.dist or dist
    if d == "normal":
        x = rng.standard_normal(shape)
    elif d == "uniform":
        x = rng.uniform(-1.0, 1.0, shape)
    elif d == "heavy":  # Pareto tails with random signs: defeats "mean of randn is 0" shortcuts and
        # reaches magnitudes (~1e2-1e3) where numerically unstable rewrites (exp without max-shift) overflow.
        x = (rng.pareto(2.0, shape) + 0.1) * rng.choice([-1.0, 1.0], shape)
    elif d == "mixed-scale":
        x = rng.standard_normal(shape) * np.exp(rng.uniform(-3, 3, shape))
    elif d == "positive":
        x = rng.uniform(0.1, 2.0, shape)
    elif d in HOLDOUT_DISTS:
        x = _holdout(d, rng, shape)
    else:
        raise ValueError(f"unknown input distribution {d!r}; known: {', '.join(KNOWN_DISTS)}")
    if dt == np.float16 and d in ("heavy", "spikes"):  # keep fp16 products/sums finite: fp16 tasks test
        x = np.clip(x, -16.0, 16.0)  # precision, not overflow
    if spec.low is not None or spec.high is not None:
        x = np.clip(x, spec.low if spec.low is not None else -np.inf, spec.high if spec.high is not None else np.inf)
    return np.asarray(x.astype(dt), order="C")


def _holdout(dist: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """The held-back families (HOLDOUT_DISTS): shapes of data the search never sees."""
    if dist == "laplace":  # sharper peak and heavier tails than the normal
        return rng.laplace(0.0, 1.0, shape)
    if dist == "spikes":  # a quiet background with rare large spikes of either sign
        x = rng.standard_normal(shape) * 0.05
        return np.where(rng.random(shape) < 0.02, rng.uniform(5.0, 40.0, shape) * rng.choice([-1.0, 1.0], shape), x)
    # "skewed": one long tail and a mean of 1 (whole sorted rows were dropped: neighbouring sorted rows are nearly
    # parallel, which makes 1 - cos ill-conditioned in float32 for the naive lowering itself; "runs" sorts runs
    # with boundaries of their own in each row instead)
    return rng.gamma(2.0, 1.0, shape) - 1.0


def _int_range(spec: ArgSpec, dt: np.dtype) -> tuple[int, int]:
    """[low, high) of an integer input's values (default: the int8 range clipped to the dtype)."""
    info = np.iinfo(dt)
    lo = int(spec.low) if spec.low is not None else max(info.min, -128)
    hi = int(spec.high) if spec.high is not None else min(info.max, 127) + 1
    return lo, hi


def _structured(spec: ArgSpec, rng: np.random.Generator, dist: str) -> np.ndarray:
    """A STRUCTURED_DISTS family: uniform levels in (0, 1) arranged along memory order, mapped to the input's
    domain by a quantile function (integers: uniform over [low, high); floats: a unit-variance logistic,
    close to the normal; floats with their own `positive` or `uniform` domain: uniform on [0.1, 2) or [-1, 1)).
    Built in O(n): no sort."""
    dt = np.dtype(spec.dtype)
    n = int(np.prod(spec.shape, dtype=np.int64))
    u = _structured_levels(dist, rng, n) if n else np.zeros(0)
    if dt.kind in "iu":
        lo, hi = _int_range(spec, dt)
        x = np.minimum(lo + np.floor(u * (hi - lo)), hi - 1)
    elif spec.dist == "positive":  # an input's own domain, as in FLOAT_DISTS
        x = 0.1 + 1.9 * u
    elif spec.dist == "uniform":
        x = 2.0 * u - 1.0
    else:
        u = np.clip(u, 1e-12, 1.0 - 1e-12)
        x = (np.log(u) - np.log1p(-u)) * (np.sqrt(3.0) / np.pi)
        if spec.low is not None or spec.high is not None:
            x = np.clip(x, spec.low if spec.low is not None else -np.inf, spec.high if spec.high is not None else np.inf)
    return np.asarray(x.astype(dt), order="C").reshape(spec.shape)  # (np.ascontiguousarray would make 0-d 1-d)


def _run_lengths(rng: np.random.Generator, n: int, longest: int) -> np.ndarray:
    """Lengths of the runs covering n elements: the first 8..min(64, longest), the rest log-uniform over
    2..longest; the last one cut at n."""
    parts = [np.array([rng.integers(8, min(64, longest) + 1)])]
    total = int(parts[0][0])
    mean = (longest - 1.0) / np.log((longest + 1.0) / 2.0) - 0.5  # of the log-uniform lengths (6.3 or 52)
    while total < n:  # one draw, rarely two
        more = np.floor(np.exp(rng.uniform(np.log(2.0), np.log(longest + 1.0), int((n - total) / mean * 1.05) + 8)))
        parts.append(more.astype(np.int64))
        total += int(parts[-1].sum())
    lengths = np.concatenate(parts)
    ends = np.cumsum(lengths)
    k = int(np.searchsorted(ends, n))  # the run holding element n - 1
    lengths = lengths[: k + 1].copy()
    lengths[k] -= int(ends[k]) - n
    return lengths


def _structured_levels(dist: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n levels in [0, 1) with the family's structure along the flat index."""
    if dist == "alternating":  # above and below the median in turn (alternating signs for symmetric domains)
        v = 0.5 * rng.random(n)
        return np.where(np.arange(n) % 2 == 0, 0.5 + v, 0.5 - v)
    # Monotone runs up to 256 long cover whole rows. Constant runs stay within 16: a longer one would hold a
    # whole normalisation group or window (instance norm over 16x16, a 64-sample rolling std), whose zero
    # variance the definitions' float32 arithmetic cannot resolve (the naive lowerings failed there).
    lengths = _run_lengths(rng, n, 16 if dist == "steps" else 256)
    run = np.repeat(np.arange(lengths.size), lengths)
    if dist == "steps":  # constant runs
        return rng.random(lengths.size)[run]
    # "runs": sorted uniforms within each run (exponential spacings, normalised per run), so each run holds the
    # order statistics of independent draws; odd runs descend
    gaps = rng.standard_exponential(n)
    cum = np.cumsum(gaps)
    ends = np.cumsum(lengths) - 1
    before = np.concatenate(([0.0], cum[ends[:-1]]))
    within = cum - before[run]
    total = within[ends] + rng.standard_exponential(lengths.size)
    u = within / total[run]
    return np.where(run % 2 == 0, u, 1.0 - u)
