"""ResultStore: append-only samples, resume keys, export."""
import csv
import io
import json

import pytest

from leka.bench.store import ResultStore, StoreError


def record(task, idx, **kw):
    r = {"task": task, "pattern": "p", "workload": task, "level": 1, "domain": "nlp", "target": "host-cpu",
         "method": "tvm-naive", "sample_idx": idx, "candidate_hash": "abc", "compiled": True, "correct": True,
         "failure": None, "speedup": 1.5, "candidate_ms": 2.0, "baseline": "tvm-naive", "baseline_ms": 3.0,
         "budget": {"compiles": 1}, "versions": {"tvm": "0.27.0", "llvm": "22", "leka": "0.1.0"}}
    r.update(kw)
    return r


def test_roundtrip_resume_keys_and_duplicates(tmp_path):
    st = ResultStore(tmp_path / "r.sqlite")
    rid = st.create_run("tvm-naive", "host-cpu", {"level": 1})
    rows = [("candidate", "round", 0, 2.0), ("candidate", "round", 1, 2.1), ("baseline", "median", 0, 3.0)]
    st.add_sample(rid, record("t1", 0), measurements=rows)
    st.add_sample(rid, record("t2", 0, correct=False, failure="wrong", speedup=None))
    assert st.finished_keys(rid) == {("t1", "tvm-naive", 0), ("t2", "tvm-naive", 0)}
    with pytest.raises(StoreError):
        st.add_sample(rid, record("t1", 0))
    # the failed duplicate left nothing behind (transaction rolled back)
    assert len(st.samples(rid)) == 2
    assert len(st.measurements(rid)) == 3
    st.close()
    # reopen: data persisted; run lookup by unique prefix
    st = ResultStore(tmp_path / "r.sqlite")
    run = st.get_run(rid[:-3])
    assert run["run_id"] == rid and run["status"] == "started" and run["config"] == {"level": 1}
    with pytest.raises(StoreError):
        st.get_run("nope")


def test_export_jsonl_and_csv(tmp_path):
    st = ResultStore(tmp_path / "r.sqlite")
    rid = st.create_run("tvm-naive", "host-cpu", {})
    st.add_sample(rid, record("t1", 0))
    st.add_sample(rid, dict(record("t1", 1, speedup=2.0), input_seed=987654321))
    lines = st.export(rid, "jsonl").splitlines()
    assert [json.loads(x)["sample_idx"] for x in lines] == [0, 1]
    rows = list(csv.DictReader(io.StringIO(st.export(rid, "csv"))))
    assert rows[1]["speedup"] == "2.0" and json.loads(rows[0]["versions"])["tvm"] == "0.27.0"
    assert rows[1]["input_seed"] == "987654321" and json.loads(lines[1])["input_seed"] == 987654321
    with pytest.raises(StoreError):
        st.export(rid, "xml")


def test_missing_key_fields_rejected(tmp_path):
    st = ResultStore(tmp_path / "r.sqlite")
    rid = st.create_run("m", "host-cpu", {})
    with pytest.raises(StoreError, match="sample_idx"):
        st.add_sample(rid, {"task": "t", "target": "x", "method": "m"})
