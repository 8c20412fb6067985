"""Kill a run mid-way (SIGKILL, in a subprocess) after a checkpoint, resume it, and check that no
proposer call was repeated and no measured result was lost."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

WORKER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from leka.agent import Policy, TraceStore, drive
    from test_agent_fakes import FakeEvaluator, ScriptedProposer, make_context

    mode, home = sys.argv[1], Path(sys.argv[2])
    script = {{"algorithm": [["a_fast", "a_slow"], ["a_same", "a_x1"], ["a_x2"], ["a_x3"], []],
              "schedule": [["s_fast", "s_more"], ["s_x1"], ["s_x2"], []],
              "memory": [["m_fast"], ["m_x1"], []]}}
    store = TraceStore(home / "agent.sqlite")
    proposer = ScriptedProposer(script, log_path=home / "proposer.log")
    evaluator = FakeEvaluator(delay_s=0.25, log_path=home / "evaluator.log")
    ctx = make_context("run-kill", store, proposer, evaluator)
    final = drive(ctx, store, policy=Policy(k=2, plateau_pct=3.0, plateau_steps=2), resume=(mode == "resume"),
                  checkpoint=home / "ckpt.sqlite")
    (home / "final.json").write_text(__import__("json").dumps(final))
""")


def _steps_written(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(str(db), timeout=5) as c:
            return c.execute("SELECT count(*) FROM agent_steps").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_kill_and_resume(tmp_path):
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER.format(tests=str(Path(__file__).parent)))
    py = sys.executable
    proc = subprocess.Popen([py, str(worker), "start", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while _steps_written(tmp_path / "agent.sqlite") < 3:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.time() < deadline, "run made no progress"
        time.sleep(0.05)
    time.sleep(0.35)  # land inside a later step: proposals journaled, a measurement in flight
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "final.json").exists()
    measured_before = [json.loads(x) for x in (tmp_path / "evaluator.log").read_text().splitlines()]
    calls_before = len((tmp_path / "proposer.log").read_text().splitlines())

    done = subprocess.run([py, str(worker), "resume", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads((tmp_path / "final.json").read_text())
    assert final["correct"]

    calls = [json.loads(x) for x in (tmp_path / "proposer.log").read_text().splitlines()]
    keys = [(c["layer"], c["base"], c["history"]) for c in calls]
    assert len(keys) == len(set(keys)), f"a proposer call was repeated: {keys}"
    assert len(calls) > calls_before  # the resumed run went on proposing

    with sqlite3.connect(str(tmp_path / "agent.sqlite")) as c:
        steps = [json.loads(r[0]) for r in c.execute("SELECT record FROM agent_steps ORDER BY step")]
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    # one proposer call per step across the kill, plus at most one control call (the first schedule step
    # on a rewrite also asks for a schedule of the task's own algorithm, in the same journaled step)
    assert len(steps) <= len(calls) <= len(steps) + 1
    # Every measurement finished before the kill is in the final trace, with its result.
    traced = {c["source_hash"]: c["speedup"] for s in steps for c in s["candidates"] if c.get("source_hash")}
    import hashlib
    for m in measured_before:
        h = hashlib.sha256(m["source"].encode()).hexdigest()[:12]
        assert traced.get(h) == m["speedup"]
    # ...and none was measured twice (finalize adds one re-measurement of the best).
    measured_all = (tmp_path / "evaluator.log").read_text().splitlines()
    assert len(measured_all) <= len(traced) + 2  # +1 finalize, +1 a measurement cut by the kill
    assert final["speedup"] == max(traced.values())
