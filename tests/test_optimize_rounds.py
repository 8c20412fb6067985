"""The budget and the tuning db (leka/optimize/rounds.py): each decision records how it was made; an entry from
the quick pass or a smaller budget does not stop a larger budget from tuning the kernel further; minutes left
over go to further rounds on the kernels whose search is not exhausted, and the run says how the budget ended."""
from __future__ import annotations

import json
from dataclasses import replace

from leka.cli.main import main
from leka.optimize.db import Winner
from leka.optimize.profile import KernelProfile
from leka.optimize.rounds import end_note, exhausted, next_round, quick_how, search_how, settles, tune_in_rounds


class _Spec:
    def __init__(self, key: str) -> None:
        self.key, self.names, self.weight = key, [key], 1


def _prof(key: str, share: float, budget: str | None) -> KernelProfile:
    return KernelProfile(_Spec(key), 1.0, share=share, budget=budget)  # type: ignore[arg-type]


def _entry(how: dict | None, source: str | None = "src", detail: dict | None = None) -> Winner:
    return Winner("k", "t", source, 2.0, 1.0, 2.0, "leka", "r0", None, {**(detail or {}), **({"how": how} if how else {})})


def test_an_entry_settles_a_kernel_only_when_a_larger_budget_could_not_do_better():
    cut = search_how("minutes=1,compiles=10", "budget: minutes limit 1 reached")
    assert not cut["exhausted"] and search_how("minutes=1", "every layer exhausted")["exhausted"]
    assert settles(_entry(cut), _prof("k", 0.5, "minutes=0.5,compiles=5"))  # this run gives it less
    assert settles(_entry(cut), _prof("k", 0.5, "minutes=1,compiles=10"))
    assert not settles(_entry(cut), _prof("k", 0.5, "minutes=3,compiles=10"))  # more minutes: continue
    assert not settles(_entry(cut), _prof("k", 0.5, "minutes=1"))  # no compiles limit now: larger
    assert settles(_entry(search_how("minutes=1", "converged (no gain at the last layer)")), _prof("k", 0.5, "minutes=9"))
    assert not settles(_entry(quick_how(0.2)), _prof("k", 0.5, "minutes=1"))  # quick pass, now searched
    assert settles(_entry(quick_how(0.2)), _prof("k", 0.01, None))  # quick pass again: same answer
    # entries written before `how` was recorded: read from their detail
    assert not settles(_entry(None, detail={"budget": "quick pass"}), _prof("k", 0.5, "minutes=1"))
    assert not settles(_entry(None, detail={"budget": "minutes=0.4", "stop_reason": "budget: minutes"}),
                       _prof("k", 0.5, "minutes=2"))


def test_leftover_minutes_go_to_kernels_not_exhausted_largest_first():
    profs = [_prof("a", 0.5, "minutes=2"), _prof("b", 0.3, "minutes=1"), _prof("c", 0.15, None), _prof("d", 0.05, None)]
    done = {"a": _entry(search_how("minutes=2", "every layer exhausted")),
            "b": _entry(search_how("minutes=1", "budget: minutes")), "c": _entry(quick_how(0.1))}
    assert exhausted(done["a"]) and not exhausted(done["b"]) and not exhausted(done["c"]) and not exhausted(None)
    picked = next_round(profs, done, left=2.5)  # room for two searches of >= 1 minute
    assert [p.spec.key for p in picked] == ["b", "c"] and all(not p.quick for p in picked)
    minutes = [float(p.budget.split("=")[1]) for p in picked]
    assert abs(sum(minutes) - 2.5) < 1e-3 and min(minutes) >= 1.0 and minutes[0] > minutes[1]
    assert next_round(profs, done, left=0.5) == [] and next_round(profs, done, left=-0.6) == []
    assert "could still be searched" in end_note(profs, done, 0.5, 1)
    # where the time still is: a 44x quick winner on the largest kernel comes after a 7.6x one on the next
    fast = {"a": replace(_entry(quick_how(0.1)), speedup=44.0), "b": replace(_entry(quick_how(0.1)), speedup=7.6)}
    assert [p.spec.key for p in next_round(profs[:2], fast, left=1.0)] == ["b"]
    every = {k: _entry(search_how("minutes=1", "every layer exhausted")) for k in "abcd"}
    assert next_round(profs, every, left=5.0) == [] and "stopped early" in end_note(profs, every, 5.0, 2)


def test_rounds_continue_until_every_search_is_exhausted(tmp_path):
    """The quick pass first for the kernel without a decision; then the searches, the quick-pass entry and the
    quick winner as incumbents; the run stops early once every search is exhausted and says so."""
    import time

    from leka.optimize.db import TuningDB

    profs = [_prof("a", 0.6, "minutes=1"), _prof("q", 0.4, None)]
    rounds: list[list[str]] = []

    def tune(todo, attempt):
        rounds.append([p.spec.key for p in todo])
        if len(rounds) == 1:  # round 0: the quick pass first, for the kernel without a decision
            assert all(p.quick and p.budget is None for p in todo)
        else:
            assert all(not p.quick and p.budget.startswith("minutes=") for p in todo)
        reason = "budget: minutes" if attempt == 0 else "every layer exhausted"
        return {p.spec.key: Winner(p.spec.key, "t", None, None, None, None, "leka", "r1", None,
                                   {"correct": True, "how": search_how(p.budget, reason)}) for p in todo}

    class _Preset:
        target = {"kind": "llvm"}

    with TuningDB(tmp_path / "t.db") as db:
        got, note = tune_in_rounds([profs[0]], profs, {"q": _entry(quick_how(0.1))}, tune, _Preset(), db,
                                   time.time() + 5 * 60, lambda _m: None)
    assert rounds == [["a"], ["a", "q"]] and "stopped early" in note and "every kernel's search" in note
    assert got["q"].source == "src"  # the quick pass's winner stays: the search found nothing faster
    assert got["q"].detail["how"]["exhausted"] and got["q"].detail["continued_in"] == "r1"


def test_spending_counts_every_round_of_this_run():
    from leka.optimize.rounds import spent_in

    w = _entry(quick_how(0.2), detail={"spent": {"minutes": 0.2}, "continued_in": "r0",
                                       "continued_spent": {"minutes": 1.0, "compiles": 6}})
    assert spent_in(w, "r0") == {"minutes": 1.2, "compiles": 6}  # first answer and the later round, same run
    w.run_id = "older"
    assert spent_in(w, "r0") == {"minutes": 1.0, "compiles": 6} and spent_in(w, "other") == {}


def test_a_quick_pass_entry_is_tuned_further_under_a_search_budget(tmp_path):
    """The db holds the quick pass's winner for the GEMV kernel; a run that gives the kernel a search tunes it
    (it is not reused for free), records how the new decision was made, and the next run with the same budget
    reuses it."""
    from leka.optimize.db import TuningDB, target_key
    from leka.targets import get_target
    from test_optimize_e2e import _seed, gemv_model

    model, db = gemv_model(tmp_path / "gemv.onnx"), tmp_path / "tuning.db"
    key = _seed(db, model)
    tkey = target_key(get_target("host-cpu"))
    with TuningDB(db) as tdb:
        w = tdb.get(key, tkey)
        w.method, w.detail = "quick-rules", {"budget": "quick pass", "how": quick_how(0.1)}
        tdb.put(w, tkey, refresh=True)

    def run(out: str) -> dict:
        assert main(["optimize", str(model), "-o", str(tmp_path / out), "--db", str(db), "--method", "tvm-dlight",
                     "--budget", "compiles=8,measurements=8", "--time-s", "0", "--quiet"]) == 0
        return json.loads((tmp_path / out / "manifest.json").read_text())

    m1 = run("a.leka")
    k1 = next(k for k in m1["kernels"] if k["key"] == key)
    assert not k1["decision"].startswith("reused"), k1["decision"]
    assert m1["budget"]["spent"].get("compiles", 0) >= 1
    with TuningDB(db) as tdb:
        how = tdb.get(key, tkey).detail["how"]
    assert how["pass"] == "search" and "compiles=" in how["budget"], how
    m2 = run("b.leka")
    k2 = next(k for k in m2["kernels"] if k["key"] == key)
    assert k2["decision"].startswith("reused from db"), k2["decision"]
    assert m2["budget"]["ended"]


def test_a_search_starting_late_gets_what_is_left_of_the_round():
    """Budgets are set when a round starts; a search that starts after earlier ones overran gets at most what
    is left of the round, and none when too little is (light_bvlc_alexnet: four 1.1-minute searches took 6.3
    minutes and the run reached its build with no minutes left). A skipped search is not exhausted and keeps
    the incumbent."""
    import time

    from leka.budget import Budget
    from types import SimpleNamespace

    from leka.optimize.rounds import merge
    from leka.optimize.tune import LATE_START_MINUTES, TuneJob, late_start

    spec = SimpleNamespace(key="k", task_id="t")
    job = TuneJob(spec, "host-cpu", "leka", {}, "compiles=8,minutes=2", "r1", None)  # type: ignore[arg-type]
    assert late_start(job) == "compiles=8,minutes=2"  # no round deadline
    job.until = time.time() + 60 * 5
    assert late_start(job) == "compiles=8,minutes=2"  # its own minutes fit
    job.until = time.time() + 60 * 0.5
    capped = late_start(job)
    assert isinstance(capped, str) and Budget.parse(capped).limits["compiles"] == 8
    assert 0.45 < (Budget.parse(capped).limits["minutes"] or 0) <= 0.5
    job.until = time.time() + 60 * LATE_START_MINUTES / 2
    skipped = late_start(job)
    assert not isinstance(skipped, str) and skipped.source is None and skipped.detail["skipped"]
    assert not exhausted(skipped)
    incumbent = Winner(spec.key, spec.task_id, "src", 3.0, 1.0, 3.0, "quick-rules", "r1", None, {"correct": True})
    assert merge(incumbent, skipped, "t", None) is incumbent  # type: ignore[arg-type]
