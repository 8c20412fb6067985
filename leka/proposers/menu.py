"""Menu prompting: at each layer a chooser picks among the decisions the offline rules can make for this
kernel, instead of writing a layer from nothing.

A layer's decision is small enough to constrain. The menu is a spread of the offline proposer's candidates
for the request (one per rule first, then further variants), each typed: its rule, its knobs, the values
each knob takes among that rule's variants, and the rule's own reason. It is shown in an order shuffled per
request (seeded, recorded) under ids that do not give the position away, so a chooser's position bias is
visible in the records (meta["menu"]["position"]).

One proposer, three strategies (``Chooser``): the model (leka.proposers.menu_model.ModelChooser), a
uniform random pick (RandomChooser) and the offline ranking (RankChooser) over the same menu: a model's
choices count where they beat the random pick.
"""
from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .base import Proposal, ProposalRequest

MENU_SIZE = 8  # options shown per request
POOL_SIZE = 48  # offline candidates considered (the menu's variants to change knobs to)


@dataclass(frozen=True)
class MenuItem:
    id: str  # stable within a request, independent of where it is shown
    rank: int  # position in the offline ranking (0 = the rules' first choice)
    proposal: Proposal

    @property
    def rule(self) -> str:
        return str(self.proposal.meta.get("rule") or "?")

    @property
    def knobs(self) -> dict[str, Any]:
        return dict(self.proposal.meta.get("knobs") or {})


@dataclass(frozen=True)
class Pick:
    """One chosen decision: a menu item (knobs possibly changed to another variant of its rule, then
    `proposal` is that variant) or the chooser's own layer (item None)."""

    proposal: Proposal
    why: str
    item: MenuItem | None = None
    changed_knobs: bool = False


@dataclass(frozen=True)
class Menu:
    shown: list[MenuItem]  # in the order shown
    pool: list[Proposal]  # every offline candidate considered (for knob changes)
    seed: int

    def position(self, item: MenuItem) -> int:
        return next(i for i, it in enumerate(self.shown) if it.id == item.id)

    def by_id(self, item_id: str) -> MenuItem | None:
        return next((it for it in self.shown if it.id == item_id), None)

    def knob_values(self, rule: str) -> dict[str, list[Any]]:
        """The values each knob of `rule` takes among its variants in the pool."""
        values: dict[str, list[Any]] = {}
        for p in self.pool:
            if p.meta.get("rule") == rule:
                for key, value in (p.meta.get("knobs") or {}).items():
                    if value not in values.setdefault(key, []):
                        values[key].append(value)
        return values

    def variant(self, rule: str, knobs: dict[str, Any], changes: dict[str, Any]) -> Proposal | None:
        """The pool's variant of `rule` with every changed knob as asked and the fewest other knobs off
        `knobs` (the rules' grids are not full products); None when no variant has the changes."""
        def off(p: Proposal) -> int:
            theirs = p.meta.get("knobs") or {}
            return sum(theirs.get(key) != value for key, value in knobs.items() if key not in changes)
        fits = [p for p in self.pool if p.meta.get("rule") == rule
                and all((p.meta.get("knobs") or {}).get(key) == value for key, value in changes.items())]
        return min(fits, key=off) if fits else None


class Chooser(Protocol):
    name: str
    is_llm: bool

    def choose(self, req: ProposalRequest, menu: Menu) -> tuple[list[Pick], dict[str, Any]]:
        """Up to req.k picks and the meta every resulting proposal carries (model calls, prompt hash)."""
        ...


@functools.lru_cache(maxsize=None)
def rule_doc(rule: str) -> str:
    """The first sentence of the offline rule's own docstring: the rule's reason, as the menu shows it."""
    from .offline.algorithm import ALGORITHM_RULES
    from .offline.memory import MEMORY_RULES
    from .offline.rules import RULES

    modules = [*ALGORITHM_RULES, *(r for rs in RULES.values() for r in rs), *(r for rs in MEMORY_RULES.values() for r in rs)]
    doc = next((getattr(m, "__doc__", None) or "" for m in modules if getattr(m, "NAME", None) == rule), "")
    text = " ".join(doc.split())
    end = text.find(". ")
    return (text[: end + 1] if 0 < end < 240 else text[:240]) or rule


def _item_id(p: Proposal, taken: set[str]) -> str:
    digest = hashlib.sha256(f"{p.meta.get('rule')}|{json.dumps(p.meta.get('knobs') or {}, sort_keys=True)}|"
                            f"{p.ir.hash()}".encode()).hexdigest()
    n = 3
    while f"o{digest[:n]}" in taken:
        n += 1
    return f"o{digest[:n]}"


def request_seed(req: ProposalRequest, seed: int) -> int:
    """A per-request shuffle seed: the attempt's seed, the task, the layer, the IR and how far the run is."""
    key = f"{seed}|{getattr(req.task, 'id', '?')}|{req.layer}|{req.ir.hash()}|{len(req.history)}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


def spread(pool: list[Proposal], size: int) -> list[Proposal]:
    """One candidate per rule in ranking order, then further variants in ranking order, up to `size`."""
    first: list[Proposal] = []
    rest: list[Proposal] = []
    rules: set[Any] = set()  # the rules seen (meta "rule", None for a proposal without one)
    for p in pool:
        rule = p.meta.get("rule")
        (rest if rule in rules else first).append(p)
        rules.add(rule)
    chosen = (first + rest)[:size]
    return sorted(chosen, key=pool.index)  # back to the rules' own order: rank = position in it


def build_menu(req: ProposalRequest, seed: int, size: int = MENU_SIZE) -> Menu:
    """The offline candidates for `req` as a shuffled menu (empty when no rule applies)."""
    from .offline import OfflineProposer

    pool = OfflineProposer().propose(replace(req, k=POOL_SIZE))
    items: list[MenuItem] = []
    taken: set[str] = set()
    for rank, p in enumerate(spread(pool, size)):
        item = MenuItem(_item_id(p, taken), rank, p)
        taken.add(item.id)
        items.append(item)
    s = request_seed(req, seed)
    random.Random(s).shuffle(items)
    return Menu(items, pool, s)


class RandomChooser:
    """Uniform over the menu, seeded by the request: the control a model must beat."""

    name = "menu-random-pick"
    is_llm = False

    def choose(self, req: ProposalRequest, menu: Menu) -> tuple[list[Pick], dict[str, Any]]:
        picked = random.Random(menu.seed ^ 0x5EED).sample(menu.shown, min(req.k, len(menu.shown)))
        return [Pick(it.proposal, "random pick", it) for it in picked], {}


class RankChooser:
    """The offline ranking's first k of the same menu (what the rules would take)."""

    name = "menu-rules-pick"
    is_llm = False

    def choose(self, req: ProposalRequest, menu: Menu) -> tuple[list[Pick], dict[str, Any]]:
        ranked = sorted(menu.shown, key=lambda it: it.rank)[: req.k]
        return [Pick(it.proposal, it.proposal.rationale, it) for it in ranked], {}


class MenuProposer:
    """Build the menu, let the chooser pick, return the picks as proposals with their menu record."""

    def __init__(self, chooser: Chooser, *, seed: int = 0, size: int = MENU_SIZE) -> None:
        self.chooser, self.seed, self.size = chooser, int(seed), int(size)
        self.name, self.is_llm = chooser.name, chooser.is_llm

    def propose(self, req: ProposalRequest) -> list[Proposal]:
        menu = build_menu(req, self.seed, self.size)
        if not menu.shown:  # no rule applies: the layer is exhausted (a model's own layer rides on a menu)
            return []
        picks, meta = self.chooser.choose(req, menu)
        return [_as_proposal(req, menu, pick, self.chooser.name, meta) for pick in picks]


def _as_proposal(req: ProposalRequest, menu: Menu, pick: Pick, proposer: str, meta: dict[str, Any]) -> Proposal:
    p = pick.proposal
    record = {"size": len(menu.shown), "seed": menu.seed, "id": pick.item.id if pick.item else "own",
              "position": menu.position(pick.item) if pick.item else None,
              "rank": pick.item.rank if pick.item else None, "changed_knobs": pick.changed_knobs}
    out_meta = {**meta, "proposer": proposer, "rule": p.meta.get("rule") if pick.item else proposer,
                "knobs": p.meta.get("knobs", {}), "menu": record,
                "cached": meta.get("cached", False), "replayed": meta.get("replayed", False)}
    return Proposal(req.layer, p.ir, pick.why or p.rationale, out_meta)
