"""Fuzzing the parsers that take outside text (hypothesis): candidate TVMScript, schedule/IR JSON, model
replies and ONNX files. Whatever the input, each answers with its one-line error type (or a result) within
its deadline: never another exception, never a hang."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leka.errors import LekaError
from leka.evaluator.script_guard import ScriptRejected, check_script

ROOT = Path(__file__).resolve().parents[1]
VALID = (ROOT / "tests" / "corpus" / "correct_naive.py").read_text()
SMALL = '''from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.sblock("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.exp(A[vi]) * T.float32(2) + A[vi // 2]
'''
# Fragments a hostile or broken text is made of: brackets, dunders, calls, operators, keywords.
TOKENS = ["(", ")", "[", "]", "{", "}", ":", ",", ".", "__class__", "__import__", "T.", "R.", "I.", "open",
          "lambda", "for", "in", "range", "if", "else", "with", "as", "=", "+", "-", "**", "<<", "*", "@", "\n",
          "    ", "\"x\"", "1", "A", "B", "T.exp", "def", "class", "import", "f\"{A}\"", "#", "\\", "'", "\x00"]
FUZZ = settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Import TVM and resolve the namespaces once, outside the timed examples (the deadline is per example)."""
    from leka.evaluator.safe_parse import safe_from_source

    check_script(VALID)
    safe_from_source(SMALL)


def _mutate(base: str, edits: list[tuple[int, int, str]]) -> str:
    text = base
    for pos, cut, insert in edits:
        p = pos % (len(text) + 1)
        text = text[:p] + insert + text[p + cut:]
    return text


EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 6), st.sampled_from(TOKENS) | st.text(max_size=4)),
                 min_size=1, max_size=6)


@FUZZ
@given(st.text(max_size=400))
def test_check_script_on_arbitrary_text(text):
    try:
        check_script(text)
    except ScriptRejected as e:
        assert "\n" not in str(e)


@FUZZ
@given(EDITS)
def test_check_script_on_mutated_candidates(edits):
    try:
        check_script(_mutate(VALID, edits))
    except ScriptRejected as e:
        assert "\n" not in str(e)


@settings(max_examples=40, deadline=10_000, suppress_health_check=[HealthCheck.too_slow])
@given(EDITS)
def test_safe_from_source_on_mutated_candidates(edits):
    from leka.evaluator.safe_parse import safe_from_source

    try:
        safe_from_source(_mutate(SMALL, edits))
    except ScriptRejected as e:  # ScriptParseError included: TVM's refusal as one line
        assert "\n" not in str(e)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=20)
STEP_NAMES = ["split", "reorder", "fuse", "parallel", "vectorize", "unroll", "cache_read", "cache_write",
              "compute_at", "decompose_reduction", "bind", "nope"]
STEP = st.fixed_dictionaries({"op": st.sampled_from(STEP_NAMES)},
                             optional={"block": st.text(max_size=6) | st.integers(), "loop": JSON,
                                       "factors": st.lists(st.integers(-4, 64) | st.none(), max_size=4),
                                       "after": st.integers(-3, 5) | st.none() | st.text(max_size=3)})
IR_JSON = st.fixed_dictionaries({"task": st.sampled_from(["ex-matmul-256", "no-such-task"]) | st.text(max_size=6)},
                                optional={"algorithm": JSON | st.fixed_dictionaries(
                                    {"kind": st.sampled_from(["task", "tvmscript", "x"]), "text": st.text(max_size=60)}),
                                    "schedule": st.lists(STEP, max_size=4) | JSON,
                                    "memory": st.lists(STEP, max_size=3) | JSON, "notes": JSON})


@FUZZ
@given(IR_JSON | JSON)
def test_candidate_ir_from_json(data):
    from leka.ir import CandidateIR

    try:
        ir = CandidateIR.from_json(data)
    except LekaError as e:
        assert "\n" not in str(e)
        return
    json.dumps(ir.to_json())  # what was accepted serialises back


@pytest.fixture(scope="module")
def reply_request():
    from leka.ir import CandidateIR
    from leka.proposers import ProposalRequest
    from leka.tasks import get_task

    task = get_task("ex-matmul-256")
    return ProposalRequest("schedule", CandidateIR.initial(task), task, "host-cpu", [], 2)


REPLY_BODY = st.fixed_dictionaries({"candidates": st.lists(st.fixed_dictionaries(
    {"rationale": st.text(max_size=10), "layer": st.lists(STEP, max_size=3) | JSON}), max_size=3) | JSON})


@settings(max_examples=50, deadline=5000, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=300),
                 REPLY_BODY.map(lambda d: "Here:\n```json\n" + json.dumps(d) + "\n```"),
                 REPLY_BODY.map(json.dumps).flatmap(lambda s: st.integers(0, len(s)).map(lambda k: s[:k]))))
def test_model_reply_parsing(reply_request, text):
    """A model's reply is either proposals or a ValueError worded for the model, nothing else."""
    from leka.proposers.llm import parse_reply

    try:
        out = parse_reply(text, reply_request, "host-cpu")
    except ValueError:
        return
    assert out and all(ir.task_id == "ex-matmul-256" for ir, _ in out)


@pytest.fixture(scope="module")
def onnx_bytes(tmp_path_factory):
    from leka.optimize import demo_models

    path = demo_models.write("ad-autoencoder", tmp_path_factory.mktemp("onnx"))
    return path.read_bytes()


@settings(max_examples=50, deadline=10_000, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200),
                 st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
                 st.integers(0, 10**6)))
def test_onnx_loading_garbage(tmp_path_factory, onnx_bytes, change):
    """Garbage, a corrupted model or a truncated one: a one-line OptimizeError or a loaded model."""
    from leka.optimize import OptimizeError
    from leka.optimize.importer import load_model

    if isinstance(change, bytes):
        data = change
    elif isinstance(change, tuple):
        pos = change[0] % len(onnx_bytes)
        data = onnx_bytes[:pos] + change[1] + onnx_bytes[pos + len(change[1]):]
    else:
        data = onnx_bytes[: change % len(onnx_bytes)]
    path = tmp_path_factory.mktemp("fuzz") / "model.onnx"
    path.write_bytes(data)
    try:
        load_model(path)
    except OptimizeError as e:
        assert "\n" not in str(e)
