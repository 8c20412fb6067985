"""Record and replay transcripts.

Recording: every completion a client serves (requests, cache hits, replays) is appended as one JSON
line (see base.transcript_entry: prompt hash, request hash, request, reply, usage, cost, flags).

Replay (``replay:PATH``): serves recorded replies without network. Mode "hash" (default) matches a
request to the earliest unused entry recorded for the same request (system, messages, params);
mode "order" serves the entries in file order whatever was asked (for prompts that legitimately
vary, e.g. carry timings). A replayed completion is never an LLM result: ``is_llm`` is False,
provider "replay", ``replayed`` True. It charges the budget what the recorded run charged (nothing
for entries that were cache hits then), so a replayed run stops where the recorded one did.
"""
from __future__ import annotations

import json
import os
import threading
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from leka.llm.base import Completion, LLMClient, build_request, request_hash
from leka.llm.errors import LLMConfigError, ReplayError

REPLAY_MODES = ("hash", "order")


class Recorder:
    """Appends transcript entries to a JSONL file; thread-safe, one flush per line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        except OSError as e:
            raise LLMConfigError(f"cannot record LLM transcript to {self.path}: {e}") from None
        self._lock = threading.Lock()
        self.count = 0

    def write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            self._file.close()


def load_transcript(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ReplayError(f"cannot read transcript {path}: {e.strerror or e}") from None
    entries = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            entry["reply"]["text"], entry["request_hash"], entry["usage"]["input_tokens"]  # noqa: B018
        except (ValueError, KeyError, TypeError):
            raise ReplayError(f"transcript {path} line {n} is not a recorded LLM reply") from None
        entries.append(entry)
    return entries


class ReplayClient(LLMClient):
    provider = "replay"
    is_llm = False

    def __init__(self, path: str | os.PathLike[str], *, mode: str = "hash", **common: Any) -> None:
        if mode not in REPLAY_MODES:
            raise LLMConfigError(f"replay mode must be one of {REPLAY_MODES}, got {mode!r}")
        super().__init__(str(path), **{k: v for k, v in common.items() if k in ("recorder", "budget")})
        self.path, self.mode = Path(path), mode
        self._entries = load_transcript(path)
        self._unused = deque(range(len(self._entries)))
        self._by_hash: dict[str, deque[int]] = defaultdict(deque)
        for i, entry in enumerate(self._entries):
            self._by_hash[entry["request_hash"]].append(i)
        self._used: set[int] = set()

    @property
    def remaining(self) -> int:
        return len(self._entries) - len(self._used)

    def _take(self, rhash: str) -> dict[str, Any]:
        """The entry for this request, after charging the budget what the recorded run charged;
        nothing is consumed if the budget refuses."""
        with self._lock:
            queue = self._by_hash.get(rhash) if self.mode == "hash" else self._unused
            while queue and queue[0] in self._used:
                queue.popleft()
            if not queue:
                what = "for this prompt" if self.mode == "hash" else "left"
                raise ReplayError(
                    f"replay {self.path}: no recorded reply {what} (request {rhash[:12]}, "
                    f"{self.remaining} of {len(self._entries)} entries unused); the prompts differ from "
                    f"the recorded run: record again, or replay in 'order' mode")
            entry = self._entries[queue[0]]
            if self.budget is not None and not entry.get("cached"):
                self.budget.charge("calls")
                usage = entry["usage"]
                self.budget.settle("tokens", int(usage["input_tokens"]) + int(usage["output_tokens"]))
                if entry.get("cost_usd") is not None:
                    self.budget.settle("usd", float(entry["cost_usd"]))
            self._used.add(queue.popleft())
            return entry

    def complete(self, system: str, messages: list[dict[str, Any]], *, max_tokens: int = 2048,
                 temperature: float = 0.0, sample: int = 0, tools: list[dict[str, Any]] | None = None,
                 schema: dict[str, Any] | None = None, tool_choice: str | None = None) -> Completion:
        request = build_request(system, messages, max_tokens, temperature, sample, tools, schema, tool_choice)
        entry = self._take(request_hash(request))
        usage = entry["usage"]
        completion = Completion(
            text=entry["reply"]["text"], provider=self.provider, model=entry.get("model") or "?",
            input_tokens=int(usage["input_tokens"]), output_tokens=int(usage["output_tokens"]),
            cost_usd=entry.get("cost_usd"), cached=False, prompt_hash=entry.get("prompt_hash", ""),
            replayed=True, finish_reason=entry["reply"].get("finish_reason"),
            usage_estimated=bool(usage.get("estimated", False)),
            tool_calls=tuple(entry["reply"].get("tool_calls") or ()))
        self._account(completion, request)
        return completion
