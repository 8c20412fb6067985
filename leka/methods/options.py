"""What every method shares about its options and its per-attempt budget.

`check_options` gives the one-line error for an unknown option (exit 2 on the CLI). `attempt_budget`
gives one attempt (one task x sample) its own limits on top of the run's shared budget: the
`agent_budget` option (a `leka.budget` spec) is what makes "the same budget per task" comparable across
methods; both accountants are charged, and either may refuse.
"""
from __future__ import annotations

from typing import Any, Iterable

from leka.errors import LekaError

ATTEMPT_BUDGET = "agent_budget"  # option name (historical: the LEKA method introduced it)


def check_options(method: str, options: dict[str, Any], known: Iterable[str]) -> None:
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise LekaError(f"method {method}: unknown option(s) {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(known))}")


def as_bool(method: str, key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise LekaError(f"method {method}: option {key}={value!r} is not a boolean (true/false)")


class BothBudgets:
    """Charges go to the bench run's shared budget and to this attempt's own limits; either may refuse."""

    def __init__(self, shared: Any, own: Any):
        self.shared, self.own = shared, own
        self.limits = own.limits

    def can_afford(self, kind: str, amount: float = 1) -> bool:
        return self.own.can_afford(kind, amount) and (self.shared is None or self.shared.can_afford(kind, amount))

    def charge(self, kind: str, amount: float = 1) -> None:
        if self.shared is not None and not self.shared.can_afford(kind, amount):
            self.shared.charge(kind, amount)  # raises BudgetExceeded, recording nothing anywhere
        self._own(self.own.charge, kind, amount)
        if self.shared is not None:
            self.shared.charge(kind, amount)

    @staticmethod
    def _own(call: Any, *args: Any) -> None:
        """The attempt's own accountant; its refusal is the attempt's, not the run's."""
        from leka.budget import AttemptBudgetExceeded, BudgetExceeded

        try:
            call(*args)
        except BudgetExceeded as e:
            raise AttemptBudgetExceeded(e.kind, e.limit, e.spent, e.requested) from None

    def settle(self, kind: str, amount: float) -> None:
        self.own.settle(kind, amount)
        if self.shared is not None:
            self.shared.settle(kind, amount)

    def check_time(self) -> None:
        self._own(self.own.check_time)
        if self.shared is not None:
            self.shared.check_time()

    def remaining(self) -> dict[str, Any]:
        """The tighter of the two accountants, kind by kind (None = unlimited in both)."""
        own = self.own.remaining()
        shared = self.shared.remaining() if self.shared is not None else {}
        out: dict[str, Any] = {}
        for kind, left in own.items():
            other = shared.get(kind)
            out[kind] = left if other is None else other if left is None else min(left, other)
        return out

    def spent(self) -> dict[str, Any]:
        return self.own.spent()


def attempt_budget(ctx: Any, options: dict[str, Any]) -> Any:
    """The budget one attempt charges: the run's, or the run's plus the attempt's own limits."""
    spec = options.get(ATTEMPT_BUDGET)
    if not spec:
        return ctx.budget
    from leka.budget import Budget

    return BothBudgets(ctx.budget, Budget.parse(str(spec)))
