"""The budget accountant: parsing, refusal before overspending, wall time, thread safety."""
from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leka.budget import CHARGE_KINDS, INTEGER_KINDS, Budget, BudgetError, BudgetExceeded
from leka.errors import LekaError


def amount_for(kind: str) -> st.SearchStrategy[float]:
    if kind in INTEGER_KINDS:
        return st.integers(min_value=0, max_value=50)
    return st.floats(min_value=0, max_value=5, allow_nan=False, allow_infinity=False)


limits_st = st.fixed_dictionaries({}, optional={
    k: (st.integers(0, 100) if k in INTEGER_KINDS else st.floats(0, 10, allow_nan=False)) for k in CHARGE_KINDS})
charges_st = st.lists(st.sampled_from(CHARGE_KINDS).flatmap(lambda k: st.tuples(st.just(k), amount_for(k))),
                      max_size=60)


@settings(max_examples=200, deadline=None)
@given(limits=limits_st, charges=charges_st)
def test_charges_never_pass_a_limit(limits, charges):
    budget = Budget(limits)
    for kind, amount in charges:
        before = budget.spent()
        affordable = budget.can_afford(kind, amount)
        try:
            budget.charge(kind, amount)
            accepted = True
        except BudgetExceeded as e:
            accepted = False
            assert e.kind == kind and isinstance(e, LekaError)
        after = budget.spent()
        assert accepted == affordable
        for k in CHARGE_KINDS:
            expected = before[k] + (amount if accepted and k == kind else 0)
            assert after[k] == expected  # a refused charge records nothing
            if budget.limits[k] is not None:
                assert after[k] <= budget.limits[k]
        remaining = budget.remaining()
        for k in CHARGE_KINDS:
            lim = budget.limits[k]
            assert remaining[k] == (None if lim is None else lim - after[k])


@pytest.mark.parametrize("spec,message", [
    ("calls=abc", "'abc' is not a number"),
    ("calls", "expected KEY=NUMBER"),
    ("calls=", "expected KEY=NUMBER"),
    ("dollars=2", "unknown budget key 'dollars'"),
    ("calls=1,calls=2", "given twice"),
    ("calls=1.5", "whole units"),
    ("usd=-1", ">= 0"),
    ("tokens=inf", ">= 0"),
])
def test_parse_errors_are_one_line_leka_errors(spec, message):
    with pytest.raises(BudgetError, match=message) as info:
        Budget.parse(spec)
    assert isinstance(info.value, LekaError) and "\n" not in str(info.value)


def test_parse_full_spec_and_unlimited():
    b = Budget.parse("calls=20,tokens=200000,usd=2,compiles=200,measurements=64,minutes=10")
    assert b.limits == {"calls": 20, "tokens": 200000, "usd": 2, "compiles": 200, "measurements": 64,
                        "minutes": 10}
    assert Budget.parse(" usd = 0.5 ").limits["usd"] == 0.5
    for b in (Budget.parse(""), Budget.parse(None), Budget.unlimited()):
        assert all(v is None for v in b.limits.values())
        b.charge("tokens", 10**9)
        assert b.remaining()["tokens"] is None


def test_unknown_kind_and_negative_amount_are_programming_errors():
    b = Budget.unlimited()
    with pytest.raises(ValueError):
        b.charge("minutes")
    with pytest.raises(ValueError):
        b.charge("calls", -1)


def test_wall_time_limit_with_an_injected_clock():
    now = [100.0]
    b = Budget({"minutes": 1, "calls": 5}, clock=lambda: now[0])
    b.charge("calls")
    b.check_time()
    now[0] += 61
    with pytest.raises(BudgetExceeded, match="wall time"):
        b.check_time()
    with pytest.raises(BudgetExceeded):
        b.charge("calls")
    assert b.spent()["calls"] == 1 and not b.can_afford("calls")
    assert b.remaining()["minutes"] == 0 and "minutes" in b.exhausted()


def test_settle_records_past_the_limit_then_refuses():
    b = Budget.parse("tokens=100")
    b.charge("tokens", 90)
    b.settle("tokens", 30)  # a reply's usage: it happened, so it is recorded
    assert b.spent()["tokens"] == 120 and b.remaining()["tokens"] == 0
    with pytest.raises(BudgetExceeded):
        b.charge("tokens", 0)
    assert b.exhausted() == ["tokens"]


def test_concurrent_charges_stop_exactly_at_the_limit():
    b = Budget.parse("calls=500")
    accepted = []

    def worker():
        n = 0
        for _ in range(200):
            try:
                b.charge("calls")
                n += 1
            except BudgetExceeded:
                pass
        accepted.append(n)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == 500 == b.spent()["calls"]


def test_to_json_round_numbers():
    b = Budget.parse("calls=3")
    b.charge("calls", 2)
    j = b.to_json()
    assert j["limits"]["calls"] == 3 and j["spent"]["calls"] == 2 and j["remaining"]["calls"] == 1
    assert repr(b) == "Budget(calls=3)"
