"""A stand-in for `python -m llama_cpp.server` (run as a script, LEKA_LLAMA_SERVER="python THIS"): takes its
flags, serves /v1/models, /v1/chat/completions (plain and streamed, as llama-cpp-python does: no usage in a
stream) and /extras/tokenize/count on 127.0.0.1, and logs its flags and every request to stderr. Like
llama-cpp-python's request schema, it refuses an assistant turn with null content (HTTP 500).

The reply is "system: <the system message's first words> | user: <the last user message's first words>",
so a test sees what reached the model. Environment: FAKE_LLAMA_FAIL=1 exits at once (a server that does
not start); FAKE_LLAMA_TOKEN_S=0.05 waits that long per streamed token.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply_text(body: dict) -> str:
    msgs = body.get("messages") or []
    system = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
    user = next((m.get("content") or "" for m in reversed(msgs) if m.get("role") == "user"), "")
    return f"system: {' '.join(system.split()[:6])} | user: {' '.join(user.split()[:6])}"


def tool_call(body: dict) -> dict | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function"):
        return {"name": choice["function"]["name"], "arguments": json.dumps({"x": 1})}
    return None


class Handler(BaseHTTPRequestHandler):
    alias = "?"

    def _json(self, obj: dict, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/v1/models":
            return self._json({"object": "list", "data": [{"id": self.alias, "object": "model"}]})
        self._json({"detail": "Not Found"}, 404)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if self.path == "/extras/tokenize/count":
            return self._json({"count": len(str(body.get("input", "")).split())})
        if self.path != "/v1/chat/completions":
            return self._json({"detail": "Not Found"}, 404)
        if any(m.get("role") == "assistant" and m.get("content", "") is None for m in body.get("messages") or []):
            return self._json({"error": {"message": "messages: content: Input should be a valid string"}}, 500)
        text, call = reply_text(body), tool_call(body)
        print(f"chat request: stream={bool(body.get('stream'))} messages={len(body.get('messages') or [])}",
              file=sys.stderr, flush=True)
        if body.get("stream"):
            return self._stream(text, call)
        message = {"role": "assistant", "content": None if call else text}
        if call:
            message["tool_calls"] = [{"id": "call_0", "type": "function", "function": call}]
        self._json({"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": self.alias,
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": len(text.split()), "total_tokens": 0}})

    def _stream(self, text: str, call: dict | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        if call:
            deltas = [{"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                       "function": {"name": call["name"], "arguments": call["arguments"][:3]}}]},
                      {"tool_calls": [{"index": 0, "function": {"arguments": call["arguments"][3:]}}]}]
        else:
            deltas = [{"content": w + " "} for w in text.split(" ")]
        delay = float(os.environ.get("FAKE_LLAMA_TOKEN_S") or 0)
        for i, delta in enumerate([{"role": "assistant"}, *deltas, {}]):
            finish = ("tool_calls" if call else "stop") if not delta else None
            chunk = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": self.alias,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(delay)
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, fmt: str, *args: object) -> None:
        print(f'INFO: {self.client_address[0]} - "{self.requestline}" {args[1] if len(args) > 1 else ""}',
              file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--model_alias", default="fake")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args, _ = ap.parse_known_args()
    print("args: " + " ".join(sys.argv[1:]), file=sys.stderr, flush=True)
    if os.environ.get("FAKE_LLAMA_FAIL"):
        print("error: failed to load model", file=sys.stderr, flush=True)
        sys.exit(1)
    Handler.alias = args.model_alias
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
