"""`leka optimize --remote` end to end with a local stand-in for the remote host: host-cpu in remote mode, a
separate process running the job folders with leka.remote.multi (the runtime path). The command starts one
paused run per kernel and exits; rounds of batch -> stand-in -> ingest resume them; the same command again
builds the artifact from their device-verified decisions (checked against ONNX Runtime here); once more,
nothing is tuned again. `leka bench run --remote` pauses its attempts and `--resume` stores them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_remote_loop import _remote_host as _stand_in  # the separate process running the job folders
from test_remote_loop import home  # noqa: F401 - the fixture: LEKA_HOME under tmp_path

from leka.cli.main import main
from leka.remote import loop, rounds
from leka.remote.pending import PendingStore


def _command(home: Path) -> tuple[Path, Path, Path, list[str]]:
    from leka.optimize.demo_models import write

    model = write("ad-autoencoder", home)
    out, store_path = home / "ad.leka", home / "pending.sqlite"
    cmd = ["optimize", str(model), "--target", "host-cpu", "--remote", "--remote-store", str(store_path),
           "--remote-steps", "1", "-o", str(out), "--db", str(home / "t.db"), "--time-s", "0", "--quiet"]
    return model, out, store_path, cmd


def _one_round(home: Path, store: PendingStore) -> None:
    jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
    _stand_in(jobs)
    rounds.ingest(store, jobs[0].parent)
    loop.resume_all(store)


@pytest.mark.slow  # ~150 s on the loaded 2-core dev host: 5 kernels, 2 rounds of the stand-in, 3 optimize calls
def test_optimize_remote_start_rounds_resume_build(home, capsys):
    _model, out, store_path, cmd = _command(home)
    assert main(cmd) == 0
    said = capsys.readouterr().out
    assert "leka remote" in said and "batch -o jobs" in said and "leka.remote.multi" in said
    assert not out.exists()  # nothing built while runs wait
    store = PendingStore(store_path)
    runs = store.runs()
    assert runs and {r["status"] for r in runs} == {"pending"}
    assert main(cmd) == 0 and len(store.runs()) == len(runs)  # waiting: the same command starts nothing new
    n_rounds = 0
    while store.open_requests():
        jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
        assert 0 < len(jobs) <= len(runs)  # one job folder per kernel per round
        _stand_in(jobs)
        assert rounds.ingest(store, jobs[0].parent)["new"] > 0
        loop.resume_all(store)
        n_rounds += 1
        assert n_rounds <= 3
    assert n_rounds == 2  # one search step, then finalize's fresh re-measure
    assert {r["status"] for r in store.runs()} == {"done"}

    assert main(cmd) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed"  # the rebuilt model matches ONNX Runtime
    agent_runs = {r["run_id"] for r in runs}
    assert {k["agent_run"] for k in m["kernels"]} == agent_runs
    for k in m["kernels"]:
        assert k["decision"].startswith("tuned")
        assert k["detail"]["remote"]["job"]  # measured by the stand-in, not here
        assert k["baseline"] == "tvm-naive"
    replaced = [k for k in m["kernels"] if k["decision"].endswith("replaced")]
    assert all(k["speedup"] > k["detail"]["noise_floor"] for k in replaced)

    assert main([*cmd, "--resume"]) == 0  # again: every kernel from the db, no run started
    assert len(store.runs()) == len(runs) and not store.open_requests()
    m2 = json.loads((out / "manifest.json").read_text())
    assert {k["decision"] for k in m2["kernels"]} <= {"reused from db: replaced", "reused from db: default kept"}
    assert m2["verification"]["status"] == "passed"


@pytest.mark.slow
def test_remote_stop_builds_with_the_best_verified_so_far(home):
    _model, out, store_path, cmd = _command(home)
    assert main(cmd) == 0
    store = PendingStore(store_path)
    _one_round(home, store)  # the search step measured; finalize's re-measure now waits
    assert store.open_requests()
    assert main([*cmd, "--remote-stop"]) == 0
    assert {r["status"] for r in store.runs()} == {"stopped"} and not store.open_requests()
    m = json.loads((out / "manifest.json").read_text())
    assert m["verification"]["status"] == "passed"
    for k in m["kernels"]:
        assert "--remote-stop" in k["detail"]["stop_reason"]
        if k["decision"].endswith("replaced"):
            assert k["detail"]["correct"] and k["speedup"] > k["detail"]["noise_floor"]


def test_the_store_rebuilds_a_model_kernel_task(home):
    from leka.errors import LekaError
    from leka.optimize.demo_models import write
    from leka.optimize.extract import kernel_specs, spec_data
    from leka.optimize.importer import import_model
    from leka.optimize.remote import FACTORY

    spec = kernel_specs(import_model(write("ad-autoencoder", home))[1])[0]
    store = PendingStore(home / "p.sqlite")
    store.put_task(spec.task_id, FACTORY, spec_data(spec))
    task = PendingStore(home / "p.sqlite").task(spec.task_id)  # another connection: only the stored data
    assert task.id == spec.task_id and [a.shape for a in task.args] == [tuple(a[1]) for a in spec.args]
    with pytest.raises(LekaError):
        store.put_task("x", "os:system", {})


def test_remote_flags_need_remote_and_a_job_target(home, capsys):
    from leka.optimize.demo_models import write

    model = write("ad-autoencoder", home)
    assert main(["optimize", str(model), "--remote-stop", "--quiet"]) == 2
    assert main(["optimize", str(model), "--target", "opencl-pocl", "--remote", "--quiet"]) == 2
    assert main(["optimize", str(model), "--remote", "--method", "tvm-dlight", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "go with --remote" in err and "cuda and cpu targets" in err and "leka method" in err


def test_bench_run_remote_pauses_and_resumes(home, capsys):
    from leka.bench.store import ResultStore

    store_path, results = home / "pending.sqlite", home / "results.sqlite"
    assert main(["bench", "run", "--method", "leka", "--task", "l1-relu6-7x7x960-f16", "--remote", str(store_path),
                 "--option", "max_steps=1", "--option", "layers=schedule", "--store", str(results), "--quiet"]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    store = PendingStore(store_path)
    assert store.open_requests() and not ResultStore(results).samples(run_id)  # paused: no sample yet
    n_rounds = 0
    while store.open_requests():
        jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
        assert len(jobs) == 1  # one job folder for the one task
        _stand_in(jobs)
        rounds.ingest(store, jobs[0].parent)
        assert main(["bench", "run", "--resume", run_id, "--store", str(results), "--quiet"]) == 0
        n_rounds += 1
        assert n_rounds <= 3
    recs = ResultStore(results).samples(run_id)
    assert len(recs) == 1  # the final record; a winner carries the stand-in's job, no winner is no_candidate
    assert recs[0]["remote"]["job"] if recs[0]["correct"] else recs[0]["status"] == "no_candidate"
    cands = [json.loads(c["record_json"]) for c in _candidate_rows(results)]
    assert cands and all(c["remote"]["job"] for c in cands if c["compiled"])  # every kernel measured there


def _candidate_rows(results: Path) -> list[dict[str, str]]:
    import sqlite3

    with sqlite3.connect(results) as db:
        return [{"record_json": r[0]} for r in db.execute("SELECT record_json FROM candidates")]


def test_a_gpu_winner_survives_the_model_builds_dlight_pass(home):
    """A remote winner is already bound to threads: the CUDA model build's dlight pass must leave it alone
    (before the replaced kernels were marked scheduled, dlight re-scheduled them and TVM raised)."""
    from leka.ir import CandidateIR
    from leka.optimize.build_job import compile_model, with_winners
    from leka.optimize.demo_models import write
    from leka.optimize.extract import kernel_specs, make_task
    from leka.optimize.importer import import_model
    from leka.proposers import ProposalRequest, get_proposer
    from leka.targets import get_target

    preset = get_target("cuda")
    fused = import_model(write("kws-dscnn", home))[1]
    proposer, winners = get_proposer(None), {}
    for spec in kernel_specs(fused):  # the offline GPU rules' first candidate of each conv, as the agent makes it
        if "conv" in spec.name:
            task = make_task(spec, preset)
            props = proposer.propose(ProposalRequest("schedule", CandidateIR.initial(task), task, preset, k=1))
            winners[spec.name] = props[0].ir.to_tvmscript(preset)
    assert winners
    assert compile_model(with_winners(fused, winners), preset) is not None


def test_remote_stop_before_any_round_is_refused(home, capsys):
    _model, out, store_path, cmd = _command(home)
    assert main(cmd) == 0
    capsys.readouterr()
    assert main([*cmd, "--remote-stop"]) == 2  # nothing measured: stopping would keep every default for nothing
    err = capsys.readouterr().err
    assert "measured none" in err and "leka remote batch" in err and "ingest" in err
    assert not out.exists() and {r["status"] for r in PendingStore(store_path).runs()} == {"pending"}


@pytest.mark.slow  # one kernel's round through the stand-in, then two optimize calls
def test_remote_stop_leaves_unmeasured_kernels_undecided(home):
    from leka.optimize.db import TuningDB

    _model, out, store_path, cmd = _command(home)
    assert main(cmd) == 0
    store = PendingStore(store_path)
    jobs = rounds.batch(store, home / "jobs", number=2, rounds=3)
    _stand_in(jobs[:1])  # the remote host measured one kernel only
    rounds.ingest(store, jobs[0].parent)
    assert main([*cmd, "--remote-stop"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    unmeasured = [k for k in m["kernels"] if k["decision"].startswith("not tuned")]
    assert len(unmeasured) == len(m["kernels"]) - 1
    assert all("before the device measured it" in k["decision"] for k in unmeasured)
    with TuningDB(home / "t.db") as db:  # only the measured kernel's decision is kept
        assert len(db._db.execute("SELECT * FROM winners").fetchall()) == 1
    n_runs = len(store.runs())
    assert main(cmd) == 0  # the next --remote call tunes the unmeasured kernels again
    assert len(store.runs()) == n_runs + len(unmeasured)
