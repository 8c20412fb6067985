"""Remote devices through TVM's RPC tracker: a tracker and a server (a separate process, as a board runs it)
on 127.0.0.1; `leka eval --rpc` and `leka bench run --rpc` measure through them and agree with the local
runner within the measurement noise (leka.bench.metrics' rule); an unreachable tracker, an unknown key and a
server that dies mid-measurement are a one-line error or a recorded failure."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from leka.bench import metrics

ROOT = Path(__file__).resolve().parents[1]
MATMUL = str(ROOT / "examples" / "host-cpu" / "matmul.py")
TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args: str) -> subprocess.Popen:
    # Its own process group: the CLI forks a popen_worker that must go with it (TVM_0_27_NOTES §6).
    env = {**os.environ, "TVM_NUM_THREADS": "2"}  # as a board's server is told its cores
    return subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)


def _stop(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def start_server(tracker_port: int, key: str) -> subprocess.Popen:
    from leka.runners.rpc import RPCSpec, tracker_keys

    p = _start("tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(_free_port()), "--port-end", "65000",
               "--tracker", f"127.0.0.1:{tracker_port}", "--key", key)
    deadline = time.time() + 30
    while key not in tracker_keys(RPCSpec("127.0.0.1", tracker_port, key)):
        assert time.time() < deadline and p.poll() is None, "the RPC server did not register"
        time.sleep(0.2)
    return p


@pytest.fixture(scope="module")
def tracker():
    port = _free_port()
    p = _start("tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1))
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.time() < deadline and p.poll() is None, "the RPC tracker did not start"
            time.sleep(0.2)
    try:
        yield port
    finally:
        _stop(p)


@pytest.fixture(scope="module")
def farm(tracker):
    server = start_server(tracker, "cpu2")
    try:
        yield f"127.0.0.1:{tracker}:cpu2"
    finally:
        _stop(server)


def _leka(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


def _eval(*extra) -> dict:
    r = _leka("eval", MATMUL, "--json", "--trials", "2", *extra)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout[r.stdout.index("{"):])


def within_noise(a: dict, b: dict) -> bool:
    """Neither result's candidate is faster than the other's beyond the measurement noise (metrics' rule for
    records without paired rounds: two independent measurements have no paired rounds)."""
    def faster(x: dict, y: dict) -> bool:
        rec = {"correct": True, "speedup": y["candidate_ms"] / x["candidate_ms"], "spread": x["spread"],
               "baseline_spread": y["spread"]}
        return metrics.is_fast(rec, 1.0)
    return not faster(a, b) and not faster(b, a)


def test_eval_through_rpc_agrees_with_local(farm):
    remote, local = _eval("--rpc", farm), _eval()
    assert remote["correct"] is True and remote["failure"] is None
    assert "TVM RPC" in remote["detail"]["sandbox"]
    assert remote["candidate_ms"] and remote["baseline_ms"] and remote["rounds"] >= 7
    assert within_noise(remote, local), (remote["candidate_ms"], remote["spread"], local["candidate_ms"],
                                         local["spread"])


def test_bench_run_through_rpc(farm, tmp_path):
    db = tmp_path / "r.sqlite"
    r = _leka("bench", "run", "--tasks", TASKS, "--pattern", "benchtest", "--trials", "2", "--no-measure",
              "--quiet", "--store", str(db), "--rpc", farm)
    assert r.returncode == 0, r.stderr[-2000:]
    from leka.bench.store import ResultStore

    st = ResultStore(db)
    (run,) = st.list_runs()
    recs = st.samples(run["run_id"])
    assert len(recs) == 2 and all(x["correct"] for x in recs)
    assert st.get_run(run["run_id"])["config"]["rpc"] == farm  # --resume keeps the device


def test_farm_config_sends_a_preset_to_its_tracker(farm, tmp_path):
    cfg = tmp_path / "farm.json"
    cfg.write_text(json.dumps({"host-cpu": {"rpc": farm}}))
    r = _leka("eval", MATMUL, "--json", "--trials", "1", "--no-measure", env={**os.environ, "LEKA_FARM": str(cfg)})
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout[r.stdout.index("{"):])
    assert res["correct"] is True and f"TVM RPC {farm}" in res["detail"]["sandbox"]
    cfg.write_text(json.dumps({"host-cpu": "not-a-spec"}))
    r = _leka("eval", MATMUL, "--no-measure", env={**os.environ, "LEKA_FARM": str(cfg)})
    assert r.returncode == 2 and "expected TRACKER_HOST:PORT:KEY" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("spec, says", [("127.0.0.1:9:cpu2", "does not answer"),
                                        ("nonsense", "expected TRACKER_HOST:PORT:KEY")])
def test_bad_tracker_is_one_line(spec, says):
    r = _leka("eval", MATMUL, "--rpc", spec, timeout=60)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_unregistered_key_is_one_line(tracker, tmp_path):
    r = _leka("eval", MATMUL, "--rpc", f"127.0.0.1:{tracker}:no-such-board", timeout=60)
    assert r.returncode == 2 and "no RPC server is registered under key 'no-such-board'" in r.stderr
    assert "Traceback" not in r.stderr
    db = tmp_path / "r.sqlite"
    r = _leka("bench", "run", "--tasks", TASKS, "--pattern", "benchtest", "--store", str(db), "--rpc",
              f"127.0.0.1:{tracker}:no-such-board", timeout=60)
    assert r.returncode == 2 and "no-such-board" in r.stderr and "Traceback" not in r.stderr
    from leka.bench.store import ResultStore

    assert ResultStore(db).list_runs() == []  # checked before a run is created


def test_server_dying_mid_measurement_is_a_recorded_failure(tracker):
    from leka.candidate import load_candidate
    from leka.evaluator import EvalConfig
    from leka.runners.rpc_evaluator import RPCEvaluator
    from leka.tasks import get_task

    server = start_server(tracker, "dying")
    cand = load_candidate(MATMUL)
    task = get_task(cand.task)
    try:
        with RPCEvaluator("host-cpu", EvalConfig(trials=1), f"127.0.0.1:{tracker}:dying") as ev:
            def kill_when_timing_starts() -> None:  # candidate and baseline loaded: the timing request is next
                deadline = time.time() + 120
                while len(ev.worker.loaded) < 2 and time.time() < deadline:
                    time.sleep(0.005)
                time.sleep(0.05)
                _stop(server)
            killer = threading.Thread(target=kill_when_timing_starts)
            killer.start()
            res = ev.evaluate(task, cand.source)
            killer.join()
            assert res.correct is True  # what was measured before the loss stays measured
            assert res.failure == "crash" and res.stage == "timing" and "remote device" in res.error
            assert "\n" not in res.error
            again = ev.evaluate(task, cand.source)  # the next candidate: no server left under the key
            assert again.failure == "crash" and "no RPC server is registered under key 'dying'" in again.error
    finally:
        _stop(server)


@pytest.mark.slow
def test_tune_through_rpc(farm):
    r = _leka("tune", "ex-matmul-256", "--rpc", farm, "--max-steps", "2", "--trials", "2", "--json", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    final = json.loads(r.stdout[r.stdout.index("{"):])
    assert final["correct"] is True and final["candidate_ms"] and final["baseline_ms"]


COUNTER = '''
@T.prim_func
def main(X: T.Buffer((64,), "int32"), Y: T.Buffer((64,), "int32")):
    T.func_attr({"tirx.noalias": True})
    if Y[0] == T.int32(-2147483558):
        Y[0] = 1
    else:
        Y[0] = Y[0] + 1
    for i in range(63):
        Y[i + 1] = X[i + 1]
'''


def test_every_timed_run_follows_the_mix_on_a_stock_server(farm):
    """A kernel counting its runs since the output was last poisoned (int32 poison: its minimum + 0x5A): through the board-side mix each
    timed run starts from poison (count 1) and sees inputs other than the uploaded ones, the checked (final)
    run the uploaded ones, and the timed runs the mix kept come back with the inputs they were given; per round (no timing library: GPU boards) the round's runs follow each other."""
    import tempfile

    import numpy as np
    import tvm

    from leka.compiler import build
    from leka.runners.rpc import RPCLoaded, RPCSpec, connect
    from leka.runners import poison
    from leka.runners.rpc_build import build_timing

    art = build(tvm.script.from_source(COUNTER), "host-cpu")
    with tempfile.TemporaryDirectory() as d:
        lib = art.export(os.path.join(d, "lib.so")).read_bytes()
    timing = build_timing({"target": "host-cpu", "params": art.params, "outputs": [1], "entry": art.entry})
    x = np.arange(64, dtype=np.int32)
    assert poison.value("int32") == -2147483558
    sess = connect(RPCSpec.parse(farm))
    per_run = per_round = None
    try:
        per_run = RPCLoaded(sess, lib, ".so", art.entry, art.params, "cpu", bytes(timing["lib"].tobytes()))
        per_round = RPCLoaded(sess, lib, ".so", art.entry, art.params, "cpu", None)
        for loaded in (per_run, per_round):
            loaded.upload([x, np.zeros(64, np.int32)])
            loaded.arm([1])
        for _ in range(3):
            assert per_run.time(5) > 0
            y = per_run.download()[1]
            assert y[0] == 1, y[0]  # every timed run found the poison
            assert not np.array_equal(y[1:], x[1:])  # and inputs of its own
        per_run.time(1, final=True)
        x_after, y = per_run.download()
        assert y[0] == 1 and np.array_equal(y[1:], x[1:]) and np.array_equal(x_after, x)
        kept = per_run.preproc.checked_runs()  # timed runs the board-side mix kept; their inputs rebuilt here
        assert kept and all(1 <= k["run"] <= 15 for k in kept)
        for k in kept:
            (given,), (left,), (out,) = k["inputs"], k["inputs_after"], k["outputs"]
            assert np.array_equal(given, left) and out[0] == 1 and np.array_equal(out[1:], given[1:])
            assert not np.array_equal(given, x)
        per_round.time(5)
        assert per_round.download()[1][0] == 6  # time_evaluator's untimed call and 5 runs, one poisoning
    finally:
        per_run = per_round = sess = None  # the session closes: the server goes back to the tracker
        import gc

        gc.collect()
