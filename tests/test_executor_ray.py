"""`--executor ray` of `leka bench run`, `leka optimize` and `leka experiment run`: the same samples (kernels,
cells) and correctness as the local executor, the store (tuning db) complete; a driver killed mid-run resumes
with no sample repeated; a bad Ray address is a one-line error, exit 2. One Ray instance (started here, 2 CPUs,
one `leka_timing` unit) serves the module; drivers are subprocesses that join it with --ray-address, as drivers
of a real cluster would."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]
TASKS = str(Path(__file__).parent / "data" / "bench_tiny_tasks.py")
SLICE = ["--method", "tvm-naive", "--tasks", TASKS, "--pattern", "benchtest", "--trials", "2"]


@pytest.fixture(scope="module")
def ray_address():
    from leka.executors.ray_executor import TIMING_RESOURCE

    ray.init(address="local", num_cpus=2, resources={TIMING_RESOURCE: 1}, include_dashboard=False, log_to_driver=False,
             object_store_memory=256 << 20, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _leka(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def _rows(db: Path, run_id: str | None = None) -> list[dict]:
    with sqlite3.connect(db) as c:
        q = "SELECT run_id, task, method, sample_idx, correct, failure, record_json FROM samples"
        rows = c.execute(q + (" WHERE run_id = ?" if run_id else ""), (run_id,) if run_id else ()).fetchall()
    return [{"run": r[0], "key": (r[1], r[2], r[3]), "correct": r[4], "failure": r[5],
             "where": json.loads(r[6]).get("where")} for r in rows]


@pytest.mark.slow  # 19 s on the 2-core host: `make test-slow` (the default run stays near 20 minutes)
def test_ray_matches_local(ray_address, tmp_path):
    local, remote = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    r = _leka("bench", "run", *SLICE, "--no-measure", "--quiet", "--store", str(local))
    assert r.returncode == 0, r.stderr
    r = _leka("bench", "run", *SLICE, "--no-measure", "--quiet", "--store", str(remote),
              "--executor", "ray", "--ray-address", ray_address)
    assert r.returncode == 0, r.stderr
    assert "[ray]" in r.stderr  # where the samples ran
    a = sorted((x["key"], x["correct"], x["failure"]) for x in _rows(local))
    b = sorted((x["key"], x["correct"], x["failure"]) for x in _rows(remote))
    assert a == b and len(a) == 2 and all(c == 1 for _, c, _ in a)
    node = ray.get_runtime_context().get_node_id()
    assert {x["where"]["executor"] for x in _rows(remote)} == {"ray"}
    assert {x["where"]["node"] for x in _rows(remote)} == {node}
    assert {x["where"]["executor"] for x in _rows(local)} == {"local"}


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no tables yet
        return 0


def _kill_after_first_sample(p: subprocess.Popen, db: Path) -> int:
    """SIGKILL the driver `p` once its store holds a sample; returns how many it holds then."""
    deadline = time.time() + 180
    while _count(db) < 1 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, f"run ended before it could be killed: {p.stderr.read()[-2000:]}"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    return _count(db)


@pytest.mark.slow
def test_killed_ray_driver_resumes_without_repeats(ray_address, tmp_path):
    db, samples = tmp_path / "r.sqlite", 3
    p = subprocess.Popen([sys.executable, "-m", "leka.cli.main", "bench", "run", *SLICE, "--samples", str(samples),
                          "--quiet", "--store", str(db), "--executor", "ray", "--ray-address", ray_address],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    killed_at = _kill_after_first_sample(p, db)
    assert 1 <= killed_at < 2 * samples
    with sqlite3.connect(db) as c:
        (run_id,) = c.execute("SELECT run_id FROM runs").fetchone()
    r = _leka("bench", "run", "--resume", run_id, "--tasks", TASKS, "--quiet", "--store", str(db),
              "--executor", "ray", "--ray-address", ray_address)
    assert r.returncode == 0, r.stderr
    assert f"({killed_at} already done)" in r.stderr
    keys = [x["key"] for x in _rows(db, run_id)]
    assert len(keys) == len(set(keys)) == 2 * samples
    with sqlite3.connect(db) as c:
        events = [e for (e,) in c.execute("SELECT event FROM run_events WHERE run_id = ? ORDER BY id", (run_id,))]
    assert events == ["started", "resumed", "finished"]


def test_unreachable_ray_address_is_one_line(tmp_path):
    r = _leka("bench", "run", *SLICE, "--quiet", "--store", str(tmp_path / "x.sqlite"), "--executor", "ray",
              "--ray-address", "127.0.0.1:9", timeout=60)
    assert r.returncode == 2
    assert "no Ray cluster answers there" in r.stderr and "Traceback" not in r.stderr
    with sqlite3.connect(tmp_path / "x.sqlite") as c:  # the run is not left "started"
        assert c.execute("SELECT event FROM run_events ORDER BY id DESC").fetchone() == ("failed",)


def test_budget_is_refused_with_ray(tmp_path):
    r = _leka("bench", "run", *SLICE, "--quiet", "--store", str(tmp_path / "x.sqlite"), "--executor", "ray",
              "--ray-address", "127.0.0.1:9", "--budget", "compiles=5", timeout=60)
    assert r.returncode == 2 and "--budget" in r.stderr and "Traceback" not in r.stderr


def two_kernel_model(path: Path) -> Path:
    """x(1,256) -> MatMul 256x256 + Add + Relu -> MatMul 256x128 + Add -> y: two distinct kernels, each with a
    share of the budget."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits, nodes, x = [], [], "x"
    for i, (k, n) in enumerate(((256, 256), (256, 128))):
        inits += [numpy_helper.from_array((rng.standard_normal((k, n)) * (2 / k) ** 0.5).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        x = f"a{i}"
    nodes.insert(2, helper.make_node("Relu", ["a0"], ["r0"]))
    nodes[3].input[0] = "r0"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128])], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _optimize(tmp_path: Path, name: str, *extra: str) -> dict:
    model = tmp_path / "two.onnx"
    if not model.exists():
        two_kernel_model(model)
    out, db = tmp_path / f"{name}.leka", tmp_path / f"{name}.db"
    r = _leka("optimize", str(model), "-o", str(out), "--db", str(db), "--method", "tvm-dlight",
              "--budget", "compiles=10,measurements=10", "--time-s", "0", *extra)
    assert r.returncode == 0, r.stderr
    return {**json.loads((out / "manifest.json").read_text()), "stderr": r.stderr}


@pytest.mark.slow  # 44 s on the 2-core host: `make test-slow` (the default run stays near 20 minutes)
def test_optimize_on_ray_matches_local_and_fills_the_db(ray_address, tmp_path):
    from leka.optimize.db import TuningDB, target_key
    from leka.optimize.tune import MIN_SPEEDUP
    from leka.targets import get_target

    local = _optimize(tmp_path, "local", "--quiet")
    remote = _optimize(tmp_path, "ray", "--executor", "ray", "--ray-address", ray_address)
    tuned = {k["key"]: k for k in remote["kernels"] if k["decision"].startswith("tuned")}
    assert len(tuned) == 2 and remote["verification"]["status"] == local["verification"]["status"] == "passed"
    assert {k["key"]: k["detail"]["correct"] for k in local["kernels"]} == {
        k: v["detail"]["correct"] for k, v in tuned.items()} == {k: True for k in tuned}
    node = ray.get_runtime_context().get_node_id()
    assert {(k["detail"]["where"]["executor"], k["detail"]["where"]["node"]) for k in tuned.values()} == {("ray", node)}
    assert f"running: {socket.gethostname()} ({node[:8]}) 1]" in remote["stderr"]  # the progress, per node
    with TuningDB(str(tmp_path / "ray.db")) as db:  # every decision the driver had to keep is in the db
        for key, k in tuned.items():
            settled = k["decision"].endswith("replaced") or k["detail"]["measured_speedup"] <= MIN_SPEEDUP
            assert (db.get(key, target_key(get_target("host-cpu"))) is not None) == settled, k


EXPERIMENT = {"name": "rayexp", "split": "test", "targets": ["host-cpu"], "levels": [1], "limit": 2, "trials": 2,
              "method": [{"method": "tvm-naive"}, {"method": "tvm-dlight"}]}


def _experiment(tmp_path: Path, name: str, samples: int, *extra: str, popen: bool = False):
    cfg = tmp_path / f"{name}.json"
    cfg.write_text(json.dumps({**EXPERIMENT, "samples": samples}))
    argv = [sys.executable, "-m", "leka.cli.main", "experiment", "run", str(cfg), "--store",
            str(tmp_path / f"{name}.sqlite"), "--out", str(tmp_path / name), *extra]
    if popen:
        return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.slow  # 25 s on the 2-core host: `make test-slow` (the default run stays near 20 minutes)
def test_experiment_on_ray_matches_local(ray_address, tmp_path):
    r = _experiment(tmp_path, "local", 1)
    assert r.returncode == 0, r.stderr
    r = _experiment(tmp_path, "ray", 1, "--executor", "ray", "--ray-address", ray_address)
    assert r.returncode == 0, r.stderr
    assert "[4/4]" in r.stderr  # one progress line per sample, both methods in one fan-out
    a = sorted((x["run"], x["key"], x["correct"], x["failure"]) for x in _rows(tmp_path / "local.sqlite"))
    b = _rows(tmp_path / "ray.sqlite")
    assert a == sorted((x["run"], x["key"], x["correct"], x["failure"]) for x in b)
    assert len(a) == 4 and all(c == 1 for *_, c, _ in a)
    assert {x["where"]["executor"] for x in b} == {"ray"}


@pytest.mark.slow
def test_killed_experiment_driver_on_ray_resumes_without_repeats(ray_address, tmp_path):
    samples, db = 2, tmp_path / "k.sqlite"
    p = _experiment(tmp_path, "k", samples, "--executor", "ray", "--ray-address", ray_address, popen=True)
    killed_at = _kill_after_first_sample(p, db)
    assert 1 <= killed_at < 2 * 2 * samples
    r = _experiment(tmp_path, "k", samples, "--executor", "ray", "--ray-address", ray_address, "--resume")
    assert r.returncode == 0, r.stderr
    assert f"({killed_at} stored before)" in r.stderr or f"[{killed_at + 1}/8]" in r.stderr
    rows = _rows(db)
    keys = [(x["run"], x["key"]) for x in rows]
    assert len(keys) == len(set(keys)) == 2 * 2 * samples
    with sqlite3.connect(db) as c:
        runs = [r for (r,) in c.execute("SELECT run_id FROM runs ORDER BY run_id")]
        for run_id in runs:
            events = [e for (e,) in c.execute("SELECT event FROM run_events WHERE run_id = ? ORDER BY id", (run_id,))]
            assert events == ["started", "resumed", "finished"], (run_id, events)
    assert len(runs) == 2


@pytest.mark.parametrize("command", ["optimize", "experiment"])
def test_unreachable_ray_address_of_optimize_and_experiment(command, tmp_path):
    if command == "optimize":
        r = _leka("optimize", str(two_kernel_model(tmp_path / "m.onnx")), "-o", str(tmp_path / "o"), "--quiet",
                  "--executor", "ray", "--ray-address", "127.0.0.1:9", timeout=60)
    else:
        r = _experiment(tmp_path, "x", 1, "--executor", "ray", "--ray-address", "127.0.0.1:9")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no Ray cluster answers there" in r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("argv, message", [
    (["optimize", "m.onnx", "--ray-address", "127.0.0.1:9"], "--ray-address needs --executor ray"),
    (["optimize", "m.onnx", "--executor", "ray", "--jobs", "2"], "--jobs is for the local executor"),
    (["experiment", "run", "x.json", "--ray-address", "127.0.0.1:9"], "--ray-address needs --executor ray"),
])
def test_executor_flag_misuse_is_one_line(argv, message, tmp_path):
    if argv[0] == "experiment":
        (tmp_path / "x.json").write_text(json.dumps({**EXPERIMENT, "samples": 1}))
    else:
        two_kernel_model(tmp_path / "m.onnx")
    r = subprocess.run([sys.executable, "-m", "leka.cli.main", *argv, "--store" if argv[0] == "experiment" else "-o",
                        str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "Traceback" not in r.stderr and message in r.stderr.strip().splitlines()[-1]
