"""Taking a tuned kernel away: `leka tune -o/--export-lib`, `leka eval` of the written file (round
trip), `leka trace --export`, run-id prefixes; and the per-layer credit of decisions the final kernel
no longer contains."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leka.agent.trace import contained_in, kernel_credit
from leka.candidate import load_candidate
from leka.kernel_export import header_target, with_header

TASK = "l1-split_heads_transpose-128x4x32"  # a tiny kernel: the whole run takes seconds


def _leka(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("leka"))
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_tune_output_round_trips_through_eval(tmp_path):
    env = dict(os.environ, LEKA_HOME=str(tmp_path / "home"))
    kernel, lib = tmp_path / "out" / "kernel.py", tmp_path / "out" / "kernel.so"
    p = _leka(["tune", TASK, "--max-steps", "2", "--trials", "2", "--json", "-o", str(kernel),
               "--export-lib", str(lib)], env)
    assert p.returncode == 0, p.stderr[-2000:]
    run_id = json.loads(p.stdout)["run_id"]
    cand = load_candidate(kernel)
    assert (cand.task, cand.target) == (TASK, "host-cpu")
    import tvm

    assert lib.stat().st_size > 0 and tvm.runtime.load_module(str(lib))["main"] is not None
    e = _leka(["eval", str(kernel), "--trials", "2", "--no-measure", "--json"], env)
    assert e.returncode == 0, e.stdout + e.stderr
    assert json.loads(e.stdout)["correct"] is True
    out = tmp_path / "steps"
    t = _leka(["trace", run_id[:9], "--export", str(out), "--plain"], env)  # a unique prefix is enough
    assert t.returncode == 0, t.stderr
    best, written = (out / "best.py").read_text().splitlines(), kernel.read_text().splitlines()
    assert best[0] == written[0] and best[2:] == written[2:]  # same header and kernel; the notes differ
    assert run_id in t.stdout and "Traceback" not in t.stderr


def test_header_round_trip_and_replacement():
    src = "# leka: task=old target=x\n# from tvm.script import tirx as T\n@T.prim_func\ndef main(): pass\n"
    text = with_header(src, "l1-a", {"kind": "llvm", "mcpu": "x86-64"}, note="tuned")
    assert text.splitlines()[0] == '# leka: task=l1-a target={"kind":"llvm","mcpu":"x86-64"}'
    assert text.count("# leka:") == 1 and text.splitlines()[1] == "# tuned"
    assert header_target("host-cpu") == "host-cpu"
    assert header_target('{"kind": "llvm"}') == '{"kind":"llvm"}'


def _ir(sched, mem=(), alg=None):
    return {"task": "t", "algorithm": alg or {"kind": "task"}, "schedule": list(sched), "memory": list(mem)}


def test_replaced_decision_passes_its_credit_on():
    s1, s2 = {"op": "split", "loop": "i"}, {"op": "tile", "loop": "j"}
    best = _ir([s2], [{"op": "cache_read"}])
    assert contained_in(_ir([s2]), best) and not contained_in(_ir([s1]), best)
    path = [{"step": 1, "layer": "schedule", "kind": "accepted", "ratio": 2.0},
            {"step": 2, "layer": "memory", "kind": "accepted", "ratio": 1.5},
            {"step": 3, "layer": "schedule", "kind": "accepted", "ratio": 3.0},
            {"step": 4, "layer": "memory", "kind": "accepted", "ratio": 1.25}]
    irs = [{"step": 1, "kind": "accepted", "ir": _ir([s1])},
           {"step": 2, "kind": "accepted", "ir": _ir([s1], [{"op": "cache_write"}])},
           {"step": 3, "kind": "accepted", "ir": _ir([s2])},
           {"step": 4, "kind": "accepted", "ir": best}]
    out = kernel_credit({"path": path, "by_layer": {}, "total": 11.25}, irs, best)
    assert [p["in_kernel"] for p in out["path"]] == [False, False, True, True]
    # steps 1 and 2 are not in the kernel: step 3 (which replaced them) carries their 2.0 * 1.5
    assert out["by_layer"]["schedule"] == pytest.approx(9.0) and out["by_layer"]["memory"] == pytest.approx(1.25)
    assert out["total"] == pytest.approx(2.0 * 1.5 * 3.0 * 1.25)


def test_bench_export_scripts_writes_stored_sources(tmp_path, capsys):
    from leka.bench.store import ResultStore
    from leka.cli.main import main

    db = tmp_path / "r.sqlite"
    with ResultStore(db) as store:
        rid = store.create_run("leka", "host-cpu", {"target_spec": "host-cpu"})
        src = "# from tvm.script import tirx as T\n@T.prim_func\ndef main():\n    T.evaluate(0)\n"
        store.add_sample(rid, {"task": "l1-a", "target": "host-cpu", "method": "leka", "sample_idx": 0,
                               "correct": True, "speedup": 2.5, "baseline": "tvm-naive", "source": src})
        store.add_sample(rid, {"task": "l1-b", "target": "host-cpu", "method": "leka", "sample_idx": 0})
        base = store.create_run("tvm-naive", "host-cpu", {"target_spec": "host-cpu"})
        store.add_sample(base, {"task": "l1-a", "target": "host-cpu", "method": "tvm-naive", "sample_idx": 0})
    out = tmp_path / "scripts"
    assert main(["bench", "export", rid[:20], "--store", str(db), "--scripts", str(out)]) == 0
    assert "1 sample(s) without a source" in capsys.readouterr().err
    cand = load_candidate(out / "l1-a.0.py")
    assert (cand.task, cand.target) == ("l1-a", "host-cpu") and "2.50x vs tvm-naive" in cand.source
    assert main(["bench", "export", base, "--store", str(db), "--scripts", str(out)]) == 2
    assert "baseline methods keep none" in capsys.readouterr().err


def test_decisions_the_final_kernel_lacks_are_credited_nothing():
    """finalize may keep an earlier kernel (its fresh re-measure failed the best): the credit follows it."""
    s1 = {"op": "split", "loop": "i"}
    path = [{"step": 2, "layer": "schedule", "kind": "accepted", "ratio": 1.65}]
    irs = [{"step": 2, "kind": "accepted", "ir": _ir([s1])}]
    out = kernel_credit({"path": path, "by_layer": {}, "total": 1.65}, irs, _ir([]))
    assert out["path"][0]["in_kernel"] is False and out["total"] == pytest.approx(1.0)


def test_a_memory_step_that_brings_its_own_schedule_is_credited_to_the_schedule():
    """Memory requests return whole schedules too: the gain of one whose schedule differs from the IR it was
    built on is the schedule's; only a decision that adds memory steps to the same schedule is the memory's."""
    s1, s2, mem = {"op": "split", "loop": "i"}, {"op": "tile", "loop": "j"}, [{"op": "cache_read"}]
    path = [{"step": 1, "layer": "schedule", "kind": "accepted", "ratio": 2.0},
            {"step": 2, "layer": "memory", "kind": "accepted", "ratio": 3.0},
            {"step": 3, "layer": "memory", "kind": "accepted", "ratio": 1.5}]
    best = _ir([s2], mem + [{"op": "cache_write"}])
    irs = [{"step": 1, "kind": "accepted", "ir": _ir([s1])},
           {"step": 2, "kind": "accepted", "ir": _ir([s2], mem)},  # a new schedule, with a memory step
           {"step": 3, "kind": "accepted", "ir": best}]  # the same schedule, one more memory step
    out = kernel_credit({"path": path, "by_layer": {}, "total": 9.0}, irs, best)
    assert [p["credited_layer"] for p in out["path"]] == ["schedule", "schedule", "memory"]
    # step 1 is not in the kernel: step 2, which replaced its schedule, carries its 2.0
    assert out["by_layer"] == pytest.approx({"algorithm": 1.0, "schedule": 6.0, "memory": 1.5})
    unknown = kernel_credit({"path": path, "by_layer": {}, "total": 9.0}, irs, None)  # no final kernel known
    assert unknown["by_layer"] == pytest.approx({"algorithm": 1.0, "schedule": 6.0, "memory": 1.5})
