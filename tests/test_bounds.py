"""The second ring (issue 21), bounds that bound: what a hostile model reply, model file or kernel can make the
tool write, spend or crash on. Cases as in tests/adversarial (README, "Second ring")."""
from __future__ import annotations

import pytest

from leka.agent.trace import TraceStore

MB = 1 << 20


def _journal(tmp_path, cap: int | None = None):
    from baselines.common import JOURNAL_CAP_BYTES, AttemptJournal

    store = TraceStore(tmp_path / "agent.sqlite")
    return store, AttemptJournal(store, "codeloop:r.t.0", cap or JOURNAL_CAP_BYTES)


def _store_bytes(tmp_path) -> int:
    return sum(p.stat().st_size for p in tmp_path.glob("agent.sqlite*"))


def test_files_written_once_are_journaled_once(tmp_path):
    """attack: a codeloop reply of 4 x 2 MB files, then 100 tool calls (before: every call journaled every file,
    822 MB in 32 s); expect: each file stored once (8 MB; with the WAL under 20 MB), every call replayable."""
    store, journal = _journal(tmp_path)
    files = {f"f{i}.py": chr(ord("a") + i) * (2 * MB) for i in range(4)}
    for call in range(1, 101):
        journal.put(f"tool{call}", {"reply": "ok", "files": files, "result": None})
    assert _store_bytes(tmp_path) < 20 * MB, _store_bytes(tmp_path)  # 8 MB of files, the WAL beside it
    assert journal.get("tool100")["files"] == files and journal.get("tool1")["reply"] == "ok"
    store.close()


def test_the_attempt_journal_stops_at_its_cap(tmp_path):
    """attack: new 1 MB files on every call; expect: the journal stops at its cap and says from which call."""
    store, journal = _journal(tmp_path, cap=4 * MB)
    for call in range(1, 21):
        journal.put(f"tool{call}", {"reply": "ok", "files": {"k.py": str(call) * MB}, "result": None})
    assert _store_bytes(tmp_path) < 8 * MB
    full = store.journal_get("codeloop:r.t.0", "journal_full")
    assert full and full["from"].startswith("tool") and journal.get("tool20") is None
    assert journal.get("tool1")["files"]["k.py"] == "1" * MB
    store.close()


def test_a_lone_surrogate_is_journaled(tmp_path):
    """a write_file with a lone surrogate (valid JSON text from a model) is stored and read back."""
    store, journal = _journal(tmp_path)
    journal.put("tool1", {"reply": "ok", "files": {"k.py": "x = '\udcff'\n"}, "result": None})
    assert journal.get("tool1")["files"]["k.py"] == "x = '\udcff'\n"
    store.close()


INTRIN_PROBE = '''
import sys, tvm
from leka.evaluator.ir_policy import IRPolicyViolation, check_ir
src = """
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = T.call_llvm_pure_intrin("float32", T.uint32(ID), T.uint32(1), A[i])
"""
for ident in sys.argv[1:]:
    try:
        check_ir(tvm.script.from_source(src.replace("ID", ident)))
        print(ident, "accepted")
    except IRPolicyViolation as e:
        print(ident, "refused:", e)
'''


@pytest.mark.parametrize("ident", ["100000", "16777215", "4294967295"])
def test_out_of_range_llvm_intrinsic_id_is_refused_not_a_segfault(ident):
    """attack: an intrinsic id past LLVM's table (before: SIGSEGV asking LLVM its name; `leka remote batch`
    runs the check in the CLI process, exit 139 on every retry); expect: a one-line policy refusal. Run in a
    child process, so that a crash is observed rather than suffered."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-c", INTRIN_PROBE, ident], capture_output=True, text=True, timeout=120,
                       cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, (p.returncode, p.stderr[-500:])
    assert f"{ident} refused: LLVM intrinsic id {int(ident)} is not an intrinsic LLVM knows" in p.stdout, p.stdout


def _chain_model(path, n: int):
    """x(1,64) through n elementwise nodes: importing it takes longer the more nodes it has."""
    import onnx
    from onnx import TensorProto, helper

    nodes, x = [], "x"
    for i in range(n):
        nodes.append(helper.make_node(("Relu", "Neg", "Abs", "Sigmoid")[i % 4], [x], [f"t{i}"]))
        x = f"t{i}"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("nodes", [20, 5000])
def test_budget_minutes_bound_the_whole_optimise_run(tmp_path, capsys, nodes):
    """attack: a model whose import and profiling alone outlast --budget minutes (before: minutes=0.1 on a
    100,000-node model ran 13.4 minutes, the limit applied to tuning only); expect: exit 2 in one line saying
    the run does not fit, within the minutes plus the TVM call in progress, nothing written. That call is at most
    the whole import, timed here right after on the same host (CI saw 9.0 s on a host running the suite 1.5x
    slower, against a fixed 8 s bound); a run bounded only in tuning spends import, profiling and the build."""
    import time

    from leka.cli.main import main
    from leka.optimize.importer import import_model

    model, out = _chain_model(tmp_path / "chain.onnx", nodes), tmp_path / "a.leka"
    t0 = time.monotonic()
    rc = main(["optimize", str(model), "-o", str(out), "--db", str(tmp_path / "t.db"), "--method", "tvm-naive",
               "--budget", "minutes=0.05", "--quiet"])
    wall = time.monotonic() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 4 and len(err) == 1 and "does not fit this model" in err[0], err  # 4: the budget ran out
    assert not out.exists()
    t0 = time.monotonic()
    import_model(model)
    import_s = time.monotonic() - t0
    assert wall < 3.0 + 2.0 + max(3.0, import_s), (wall, import_s)


def test_the_clock_leaves_tuning_what_the_build_does_not_need(monkeypatch):
    """The tuning minutes: what is left less the build's reserve (3 compiles when timed, longer on a loaded
    host), less a tenth for searches that end a step past their minutes; too little refused."""
    from leka.optimize import OptimizeError
    from leka.optimize import clock as clock_mod
    from leka.optimize.clock import WholeRun

    monkeypatch.setattr(clock_mod, "load_factor", lambda: 1.0)

    now = [0.0]
    clock = WholeRun(10.0, clock=lambda: now[0])
    now[0] = 20.0  # import (5 s) and profiling (10 s of kernel compiles) took 20 s
    # timed: the optimised build (twice: scheduled kernels compile slower), tvm-naive, tvm-dlight, and 4 x time_s
    assert clock.tuning_minutes(5.0, 10.0, timed=True, time_s=1.0) == pytest.approx((600 - 20 - 45 - 4) * 0.9 / 60)
    assert clock.tuning_minutes(5.0, 10.0, timed=False, time_s=1.0) == pytest.approx((600 - 20 - 25) * 0.9 / 60)
    # kernels that compile in a second still get MIN_COMPILE_S a build
    assert clock.tuning_minutes(5.0, 1.0, timed=True, time_s=1.0) == pytest.approx((600 - 20 - 35 - 4) * 0.9 / 60)
    # a default build of 2 s a call: each build's first call and 2 rounds of (default, dlight, optimised) kept
    # too (comparison builds of seconds a call get e2e_timing.SLOW_COMPARISON_ROUNDS rounds); of 0.5 s a call:
    # 5 rounds, one batch a round (a batch outlasts the 0.8 s round); of 0.1 s a call: 3 batches a round
    assert clock.tuning_minutes(5.0, 10.0, timed=True, time_s=1.0, default_s=2.0) == pytest.approx(
        (600 - 20 - 49 - 18) * 0.9 / 60)
    assert clock.tuning_minutes(5.0, 10.0, timed=True, time_s=1.0, default_s=0.5) == pytest.approx(
        (600 - 20 - 49 - 7.5) * 0.9 / 60)
    assert clock.tuning_minutes(5.0, 10.0, timed=True, time_s=1.0, default_s=0.1) == pytest.approx(
        (600 - 20 - 49 - 4.5) * 0.9 / 60)
    monkeypatch.setattr(clock_mod, "load_factor", lambda: 2.0)  # load twice the cores: compiles take twice
    assert clock.tuning_minutes(5.0, 10.0, timed=True, time_s=1.0) == pytest.approx((600 - 20 - 94) * 0.9 / 60)
    now[0] = 590.0
    with pytest.raises(OptimizeError, match="does not fit"):
        clock.tuning_minutes(5.0, 10.0, timed=False, time_s=0.0)
    assert WholeRun(None).tuning_minutes(5.0, 10.0, True, 1.0) is None
