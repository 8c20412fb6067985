"""Local HTTP servers that speak the LLM wire formats, for the client tests.

``FakeLLMServer(flavor)`` listens on 127.0.0.1 at a free port, serves from a thread, logs every
request (path, lower-cased headers, JSON body) and answers from a script of actions, then with a
default reply. It stops when the test is done and, as a safety net, by itself after ``lifetime_s``.

Flavors: "openai" (/v1/chat/completions, Bearer key, usage prompt/completion_tokens),
"anthropic" (/v1/messages, needs anthropic-version and a key header, content blocks, usage
input/output_tokens), "compat" (/v1/chat/completions as llama.cpp's llama-server / vLLM / Ollama
expose it: no auth, extra fields such as timings).

Native tool use: an Action with ``tool_calls=[{"name", "arguments": dict}]`` answers with tool calls
in the flavor's wire format (OpenAI ``message.tool_calls`` with JSON-string arguments; Anthropic
``tool_use`` content blocks). ``responder(body) -> Action | None`` (when set) picks the reply from the
request itself, before the script: tests that must answer by what the prompt says use it.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FLAVORS = ("openai", "anthropic", "compat")
API_KEY = "test-key"


@dataclass
class Action:
    status: int = 200
    text: str = "hello from the fake server"
    usage: bool = True  # False: omit usage (some compat servers do)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (client timeouts)
    raw_body: str | None = None  # send this instead of a well-formed reply
    tool_calls: list[dict[str, Any]] | None = None  # [{"name", "arguments": dict}] (ids are made up)


def _tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


class FakeLLMServer:
    def __init__(self, flavor: str, *, default_text: str = "hello from the fake server",
                 lifetime_s: float = 60.0) -> None:
        assert flavor in FLAVORS, flavor
        self.flavor = flavor
        self.default_text = default_text
        self.script: list[Action] = []
        self.responder: Callable[[dict[str, Any]], Action | None] | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._watchdog = threading.Timer(lifetime_s, self.stop)
        self._watchdog.daemon = True
        self._stopped = False

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "FakeLLMServer":
        self._thread.start()
        self._watchdog.start()
        return self

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def then(self, *actions: Action) -> "FakeLLMServer":
        self.script.extend(actions)
        return self

    # -- answering ------------------------------------------------------------------------------
    def _next_action(self, body: Any) -> Action:
        picked = self.responder(body) if self.responder is not None else None
        if picked is not None:
            return picked
        with self._lock:
            return self.script.pop(0) if self.script else Action(text=self.default_text)

    def handle(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, str], str]:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
        expected = "/v1/messages" if self.flavor == "anthropic" else "/v1/chat/completions"
        if path != expected:
            return 404, {}, self._error(404, f"no route {path}")
        auth_error = self._check_auth(headers)
        if auth_error:
            return 401, {}, self._error(401, auth_error)
        action = self._next_action(body)
        if action.delay_s:
            time.sleep(action.delay_s)
        if action.raw_body is not None:
            return action.status, action.headers, action.raw_body
        if action.status != 200:
            return action.status, action.headers, self._error(action.status, f"scripted {action.status}")
        return 200, action.headers, json.dumps(self._reply(body, action))

    def _check_auth(self, headers: dict[str, str]) -> str | None:
        if self.flavor == "compat":
            return None
        bearer = headers.get("authorization", "")
        if self.flavor == "openai":
            return None if bearer == f"Bearer {API_KEY}" else "Incorrect API key provided"
        if "anthropic-version" not in headers:
            return "missing anthropic-version header"
        ok = headers.get("x-api-key") == API_KEY or bearer == f"Bearer {API_KEY}"
        return None if ok else "invalid x-api-key"

    def _error(self, status: int, message: str) -> str:
        if self.flavor == "anthropic":
            kind = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(
                status, "api_error" if status >= 500 else "invalid_request_error")
            return json.dumps({"type": "error", "error": {"type": kind, "message": message}})
        return json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": status}})

    def _reply(self, body: dict[str, Any], action: Action) -> dict[str, Any]:
        prompt_tokens = _tokens([body.get("system"), body.get("messages")])
        completion_tokens = max(1, len(action.text) // 4)
        model = body.get("model", "?")
        calls = [dict(c, id=f"call_{self.count}_{i}") for i, c in enumerate(action.tool_calls or [])]
        if self.flavor == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": action.text}] if action.text or not calls else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in calls]
            reply: dict[str, Any] = {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": "tool_use" if calls else "end_turn",
                "stop_sequence": None}
            if action.usage:
                reply["usage"] = {"input_tokens": prompt_tokens, "output_tokens": completion_tokens}
            return reply
        reply = {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": action.text if action.text or not calls
                                                 else None},
                         "finish_reason": "tool_calls" if calls else "stop", "logprobs": None}]}
        if calls:
            reply["choices"][0]["message"]["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in calls]
        if action.usage:
            reply["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                              "total_tokens": prompt_tokens + completion_tokens}
        if self.flavor == "compat":  # llama-server adds these
            reply["system_fingerprint"] = "b4000-fake"
            reply["timings"] = {"prompt_n": prompt_tokens, "predicted_n": completion_tokens}
        return reply


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a stuck client cannot hold a handler thread forever

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, text = server.handle(self.path, headers, body)
            data = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
