"""The budget accountant: one object, shared by every consumer in a run (LLM clients, the evaluator,
search methods), that meters what the run spends and refuses to spend past its limits.

Chargeable kinds: calls (LLM requests), tokens (LLM input + output), usd (LLM cost), compiles,
measurements. Wall time ("minutes") is not charged; it is checked by ``check_time()`` and by every
``charge()``. ``charge()`` refuses *before* spending past a limit and then records nothing, so the
spent amounts never exceed a limit through it. Usage that already happened and must be recorded
whatever the limit says (the tokens of a reply that came back) goes through ``settle()``, which may
overshoot; once a kind is over its limit every further charge of it is refused.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Mapping

from leka.errors import ExitCode, LekaError

CHARGE_KINDS: tuple[str, ...] = ("calls", "tokens", "usd", "compiles", "measurements")
# Kinds counted in whole units; the others (usd, minutes) take fractions.
INTEGER_KINDS = frozenset({"calls", "tokens", "compiles", "measurements"})
LIMIT_KEYS: tuple[str, ...] = CHARGE_KINDS + ("minutes",)


class BudgetError(LekaError):
    """A malformed budget specification (``--budget``)."""


class BudgetExceeded(LekaError):
    """Spending this much would pass a limit; nothing was recorded."""

    exit_code = ExitCode.BUDGET

    def __init__(self, kind: str, limit: float, spent: float, requested: float) -> None:
        self.kind, self.limit, self.spent, self.requested = kind, limit, spent, requested
        if kind == "minutes":
            msg = f"budget exhausted: wall time {spent:.2f} of {_fmt(limit)} minutes used"
        else:
            msg = (f"budget exhausted: {kind} limit {_fmt(limit)}, spent {_fmt(spent)}, "
                   f"this needs {_fmt(requested)} more")
        super().__init__(msg)


class AttemptBudgetExceeded(BudgetExceeded):
    """An attempt's own limits (a method's per-task ``agent_budget``) refused: that attempt ends, the run goes on."""


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def _parse_value(key: str, text: str, item: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BudgetError(f"bad budget item '{item}': '{text}' is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise BudgetError(f"bad budget item '{item}': the limit must be a finite number >= 0")
    if key in INTEGER_KINDS and not value.is_integer():
        raise BudgetError(f"bad budget item '{item}': {key} is counted in whole units")
    return value


def with_minutes(spec: str | None, minutes: float) -> str:
    """`spec` with its minutes limit replaced by `minutes` (added when it had none)."""
    parts = [p for p in (spec or "").split(",") if p.strip() and not p.strip().startswith("minutes")]
    return ",".join([*parts, f"minutes={minutes:.6g}"])


class Budget:
    """Limits (None = unlimited) and what has been spent against them. Thread-safe."""

    def __init__(self, limits: Mapping[str, float | None] | None = None, *,
                 clock: Any = time.monotonic) -> None:
        limits = dict(limits or {})
        unknown = sorted(set(limits) - set(LIMIT_KEYS))
        if unknown:
            raise BudgetError(f"unknown budget key(s) {', '.join(unknown)}; known: {', '.join(LIMIT_KEYS)}")
        self.limits: dict[str, float | None] = {k: limits.get(k) for k in LIMIT_KEYS}
        self._spent: dict[str, float] = {k: 0 for k in CHARGE_KINDS}
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def parse(cls, spec: str | None) -> "Budget":
        """``"calls=20,tokens=200000,usd=2,compiles=200,measurements=64,minutes=10"``, any subset.
        An empty spec is unlimited."""
        limits: dict[str, float] = {}
        for item in (spec or "").split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, text = (part.strip() for part in item.partition("="))
            if not sep or not key or not text:
                raise BudgetError(f"bad budget item '{item}': expected KEY=NUMBER, e.g. calls=20")
            if key not in LIMIT_KEYS:
                raise BudgetError(f"unknown budget key '{key}' in '{item}'; known: {', '.join(LIMIT_KEYS)}")
            if key in limits:
                raise BudgetError(f"budget key '{key}' given twice")
            limits[key] = _parse_value(key, text, item)
        return cls(limits)

    @classmethod
    def unlimited(cls) -> "Budget":
        return cls({})

    # -- spending -----------------------------------------------------------------------------
    def _check_kind(self, kind: str, amount: float) -> None:
        if kind not in CHARGE_KINDS:
            raise ValueError(f"unknown budget kind {kind!r}; chargeable: {CHARGE_KINDS}")
        if amount < 0 or not math.isfinite(amount):
            raise ValueError(f"budget amounts are finite and >= 0, got {amount!r}")

    def _elapsed_minutes(self) -> float:
        return (self._clock() - self._started) / 60.0

    def check_time(self) -> None:
        """Raise BudgetExceeded once the wall-time limit has passed."""
        limit = self.limits["minutes"]
        if limit is not None:
            elapsed = self._elapsed_minutes()
            if elapsed >= limit:
                raise BudgetExceeded("minutes", limit, elapsed, 0)

    def can_afford(self, kind: str, amount: float = 1) -> bool:
        self._check_kind(kind, amount)
        with self._lock:
            return self._fits(kind, amount) and not self._out_of_time()

    def _out_of_time(self) -> bool:
        limit = self.limits["minutes"]
        return limit is not None and self._elapsed_minutes() >= limit

    def _fits(self, kind: str, amount: float) -> bool:
        limit = self.limits[kind]
        # A zero-amount charge still fails once the kind is overdrawn (settle() can overshoot).
        return limit is None or (self._spent[kind] + amount <= limit and self._spent[kind] <= limit)

    def charge(self, kind: str, amount: float = 1) -> None:
        """Record ``amount`` of ``kind``, or raise BudgetExceeded (recording nothing) if that would
        pass its limit or the wall-time limit has passed."""
        self._check_kind(kind, amount)
        with self._lock:
            self.check_time()
            if not self._fits(kind, amount):
                limit = self.limits[kind]
                assert limit is not None  # only a limited kind does not fit
                raise BudgetExceeded(kind, limit, self._spent[kind], amount)
            self._spent[kind] += amount

    def settle(self, kind: str, amount: float) -> None:
        """Record usage that has already happened (tokens and cost of a reply that came back).
        Never refuses, may overshoot the limit; later charges of an overdrawn kind are refused."""
        self._check_kind(kind, amount)
        with self._lock:
            self._spent[kind] += amount

    # -- reporting ----------------------------------------------------------------------------
    def spent(self) -> dict[str, float]:
        with self._lock:
            out = dict(self._spent)
        out["minutes"] = self._elapsed_minutes()
        return out

    def remaining(self) -> dict[str, float | None]:
        """limit - spent per kind (None where unlimited); never below 0."""
        spent = self.spent()
        return {k: None if lim is None else max(lim - spent[k], 0) for k, lim in self.limits.items()}

    def exhausted(self) -> list[str]:
        """The kinds with nothing left (including "minutes")."""
        return [k for k, left in self.remaining().items() if left is not None and left <= 0]

    def to_json(self) -> dict[str, Any]:
        return {"limits": dict(self.limits), "spent": self.spent(), "remaining": self.remaining()}

    def __repr__(self) -> str:
        lim = ",".join(f"{k}={_fmt(v)}" for k, v in self.limits.items() if v is not None)
        return f"Budget({lim or 'unlimited'})"
