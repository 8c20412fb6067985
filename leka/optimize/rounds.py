"""How each tuning decision was made, when a db entry settles a kernel, and tuning in rounds while the minutes last.

Every decision records how it was made (`detail["how"]`): the quick pass, or a search under a Budget spec that
ended exhausted (the method had nothing more to try: its rules, layers or steps) or cut off by its budget.
A db entry settles a kernel for a later run only when that run could not do better: a search that was exhausted,
or one whose budget was at least as large in every limit as the kernel gets now. Otherwise the entry (re-verified)
is the incumbent and the kernel is searched again under the larger budget; the faster of the two is kept, and
the entry then records the larger budget (a search that found nothing better still settles that budget).

With a minutes budget, round 0 is the quick pass over every kernel without a decision (quick_first: a verified
floor for each, largest share first), and what it leaves (kernels that only got the quick pass or were not reached,
searches cut off early) is spent in search rounds on the kernels whose search is not exhausted, largest share
first, each given at least profile.MIN_SEARCH_MINUTES; the run stops early only when every kernel's search is
exhausted, and says so. A new round is a new search (a new agent run, its own seed), not a resumed one.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

from .db import TuningDB, Winner, target_key
from .profile import MIN_SEARCH_MINUTES, KernelProfile

QUICK = "quick pass"
# stop reasons that mean "more budget would have let it go on" (leka/agent: budget errors, the task clock)
_CUT_OFF = ("budget", "task wall-clock limit")


def search_how(budget: str, stop_reason: str | None) -> dict[str, Any]:
    """How a searched decision was made: its Budget spec and whether the search was exhausted."""
    cut = any(str(stop_reason or "").startswith(c) for c in _CUT_OFF)
    return {"pass": "search", "budget": budget, "stop_reason": stop_reason, "exhausted": not cut}


def quick_how(minutes: float) -> dict[str, Any]:
    return {"pass": "quick", "budget": QUICK, "minutes": round(minutes, 4), "exhausted": False}


def decided_how(w: Winner) -> dict[str, Any]:
    """`detail["how"]`, or for an entry written before it was recorded, what its detail implies."""
    d = w.detail or {}
    if isinstance(d.get("how"), dict):
        return d["how"]
    if d.get("budget") == QUICK or w.method == "quick-rules":
        return quick_how(0.0)
    if d.get("budget"):
        return search_how(str(d["budget"]), d.get("stop_reason"))
    return {"pass": "unknown", "budget": None, "exhausted": True}  # hand-made or seeded: taken as final


def settles(w: Winner, p: KernelProfile) -> bool:
    """Whether entry `w` decides kernel `p` for this run (else it is the incumbent of a new search)."""
    how = decided_how(w)
    if how.get("exhausted") or p.budget is None:
        return True  # nothing more to find, or this run gives the kernel no search (quick pass, build-only)
    if how.get("pass") != "search":
        return False  # the quick pass's result, and this run searches the kernel
    return _at_least(str(how.get("budget") or ""), p.budget)


def _at_least(old: str, new: str) -> bool:
    """Every limit of budget `new` is no larger than `old`'s (a limit `old` did not set was unlimited)."""
    from leka.budget import Budget

    try:
        a, b = Budget.parse(old).limits, Budget.parse(new).limits
    except Exception:  # an unparsable old spec: not evidence of a larger search
        return False
    return all((was := a.get(k)) is None or ((now := b.get(k)) is not None and now <= was * 1.001)
               for k in set(a) | set(b))


def merge(old: Winner | None, new: Winner, tkey: str, db: TuningDB) -> Winner:
    """The decision after searching again with `old` as the incumbent: the faster; an incumbent that stays
    records the newer (larger) search's `how` when that search ran (its entry rewritten in the db)."""
    if old is None or old.source is None or (new.source is not None and (new.speedup or 0) > (old.speedup or 0)):
        return new  # already in the db (tune.record_decision) when it is worth keeping
    if not (new.source or new.detail.get("correct")):
        return old  # the new search failed: it says nothing about the larger budget
    best = replace(old, detail={**old.detail, "how": new.detail.get("how") or decided_how(old),
                                "continued_in": new.run_id, "continued_best": new.detail.get("measured_speedup"),
                                "continued_spent": new.detail.get("spent") or {}})
    db.put(best, tkey, refresh=True)
    return best


def spent_in(w: Winner, run_id: str) -> dict[str, float]:
    """What run `run_id` spent on this decision: its own search, and the search that continued it."""
    parts = [w.detail.get("spent") or {} if w.run_id == run_id else {},
             w.detail.get("continued_spent") or {} if w.detail.get("continued_in") == run_id else {}]
    out: dict[str, float] = {}
    for part in parts:
        for kind, v in part.items():
            if isinstance(v, (int, float)):
                out[kind] = out.get(kind, 0) + v
    return out


def exhausted(w: Winner | None) -> bool:
    """Whether a decision made in this run leaves nothing for more time (a crashed job is not retried)."""
    if w is None:
        return False
    if "how" not in w.detail and w.detail.get("error"):
        return True
    return bool(decided_how(w).get("exhausted"))


def tune_in_rounds(first: list[KernelProfile], everyone: list[KernelProfile], known: dict[str, Winner],
                   tune: Callable[..., dict[str, Winner]], preset: Any, db: TuningDB, until: float | None,
                   say: Callable[[str], None]) -> tuple[dict[str, Winner], str]:
    """Tune `first` (as profiled; `known`: the decisions so far, db entries settled or incumbent), then, while
    minutes are left, those of `everyone` whose search is not exhausted; returns the decisions and a one-line note
    on how the budget ended. `tune(profs, attempt)` runs leka.executors.tuning.tune_on_executor (attempt: the
    round, a new search's seed and agent run)."""
    tkey, decisions, rounds, todo = target_key(preset), dict(known), 0, first
    if until is not None:
        todo = quick_first(first, known, until)
        say(f"quick pass first: the rules' first candidates for {len(todo)} kernel(s), largest share first")
    while True:
        for key, w in tune(todo, rounds).items():
            decisions[key] = merge(decisions.get(key), w, tkey, db) if key in decisions else w
        rounds += 1
        if until is None:
            return decisions, "no minutes limit: one search per kernel"
        left = (until - time.time()) / 60
        todo = next_round(everyone, decisions, left)
        if not todo:
            return decisions, end_note(everyone, decisions, left, rounds)
        say(f"round {rounds + 1}: {left:.2g} min left for {len(todo)} kernel(s) whose search is not exhausted")


def quick_first(first: list[KernelProfile], known: dict[str, Winner], until: float) -> list[KernelProfile]:
    """Round 0 of a minutes budget: every kernel without a decision gets the quick pass (the offline rules' first
    candidates, largest share first) before any search, so each has a verified floor early and the searches that
    follow (next_round, the quick winner as incumbent) spend what is left. Searching first let one slow kernel
    end with nothing: light_bvlc_alexnet's 9216x4096 GEMV (25 % of the model, 35 s an evaluation) was searched
    for its ~1 minute share, found no winner, and stayed 35x slower than the rules' first candidate."""
    todo = [p for p in first if p.spec.key not in known]
    each = max(0.0, (until - time.time()) / 60) / max(1, len(todo))  # the pass runs on until `until` anyway
    for p in todo:
        p.budget, p.quick, p.quick_minutes, p.why_not = None, True, each, "quick pass first"
    return todo


def remaining_share(p: KernelProfile, w: Winner | None) -> float:
    """The kernel's share of the default build's time, divided by its decision's speedup so far: where the time
    still is (a GEMV the quick pass made 44x faster no longer comes before a conv it made 7.6x faster)."""
    speedup = (w.speedup or 1.0) if w is not None and w.source else 1.0
    return p.share / max(1.0, speedup)


def next_round(profs: list[KernelProfile], decisions: dict[str, Winner], left: float) -> list[KernelProfile]:
    """The kernels the next round searches (their budget set): not exhausted, largest remaining share first
    (remaining_share), as many as get MIN_SEARCH_MINUTES each of the `left` minutes; what is left beyond those
    minimums is split by remaining share (the round's budgets add up to `left`)."""
    if left < MIN_SEARCH_MINUTES:
        return []
    now = {p.spec.key: remaining_share(p, decisions.get(p.spec.key)) for p in profs}
    open_ = sorted((p for p in profs if not exhausted(decisions.get(p.spec.key))), key=lambda p: -now[p.spec.key])
    picked = open_[:int(left // MIN_SEARCH_MINUTES)]
    norm = sum(now[p.spec.key] for p in picked) or 1.0
    spare = left - len(picked) * MIN_SEARCH_MINUTES  # what is left after each gets its minimum: split by share
    for p in picked:
        p.budget = f"minutes={MIN_SEARCH_MINUTES + spare * now[p.spec.key] / norm:.4g}"
        p.quick, p.why_not = False, ""
    return picked


def end_note(profs: list[KernelProfile], decisions: dict[str, Winner], left: float, rounds: int) -> str:
    """How the minutes ended: spent, or stopped early because every kernel's search is exhausted."""
    open_ = [p for p in profs if not exhausted(decisions.get(p.spec.key))]
    if not open_:
        return (f"stopped early after {rounds} round(s), {max(left, 0):.2g} min unspent: every kernel's search "
                "is exhausted")
    return (f"minutes spent after {rounds} round(s): {len(open_)} kernel(s) could still be searched "
            "(a larger --budget minutes continues them, the tuning db keeps what was found)")
