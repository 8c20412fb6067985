"""The provider-independent part of an LLM client: request normalisation and hashing, the response
cache, budget charging, our own retries (tenacity; the SDKs' retries are off), usage and cost
metering, transcript recording, and parse-with-feedback (``complete_parsed``).

A provider adapter only implements ``_send(request) -> RawReply`` and translates its SDK's errors
into TransientError (retried: 408, 429, 5xx, timeouts, connection errors), LLMAuthError or
LLMRequestError (never retried).
"""
from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol, TypeVar

import tenacity

from leka.budget import Budget, BudgetExceeded
from leka.llm.cache import ResponseCache
from leka.llm.errors import LLMAuthError, LLMError, LLMReplyError, LLMRequestError, one_line
from leka.llm.pricing import cost_usd

T = TypeVar("T")
ROLES = ("user", "assistant")

PARSE_FEEDBACK = ("Your previous reply could not be used: {error}\n"
                  "Reply again with the complete answer in exactly the required format.")


@dataclass(frozen=True)
class Completion:
    """One reply. Tokens and cost are those of the model's reply (at list price; cost None for an
    unpriced model); ``cached``/``replayed`` say it was served without a request. A cache hit charges
    nothing to the budget; a replayed reply charges what the recorded run charged (see docs/llm.md)."""

    text: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cached: bool
    prompt_hash: str
    replayed: bool
    finish_reason: str | None = None
    attempts: int = 0  # HTTP requests made for this completion (retries included); 0 if served locally
    latency_s: float = 0.0
    usage_estimated: bool = False  # the server reported no usage; tokens are a chars/4 estimate
    # native tool use: [{"id", "name", "arguments": dict}] the model asked for (empty: a plain reply)
    tool_calls: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["tool_calls"] = list(self.tool_calls)
        return d


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: wait initial_s * multiplier**(n-1) (+ up to jitter_s), at most max_s;
    a server's Retry-After is honoured up to max_s. ``attempts`` counts the first try."""

    attempts: int = 5
    initial_s: float = 1.0
    multiplier: float = 2.0
    max_s: float = 30.0
    jitter_s: float = 0.5

    def wait_s(self, attempt_number: int, retry_after_s: float | None = None) -> float:
        wait = min(self.max_s, self.initial_s * self.multiplier ** max(attempt_number - 1, 0))
        wait += random.uniform(0, self.jitter_s) if self.jitter_s > 0 else 0.0
        if retry_after_s is not None:
            wait = max(wait, retry_after_s)
        return min(wait, self.max_s)


@dataclass
class RawReply:
    """What a provider adapter returns for one successful request."""

    text: str
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"id", "name", "arguments": dict}]


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, timeout, connection)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after_s: float | None = None):
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class TranscriptSink(Protocol):
    def write(self, entry: dict[str, Any]) -> None: ...


def classify_status(status: int, message: str, spec: str, retry_after_s: float | None = None,
                    key_hint: str = "") -> Exception:
    """The error to raise for an HTTP error status: retry 408/429/5xx, never auth or other 4xx."""
    if status in (408, 429) or status >= 500:
        return TransientError(f"HTTP {status}: {message}", status=status, retry_after_s=retry_after_s)
    if status in (401, 403):
        hint = f" (check {key_hint})" if key_hint else ""
        return LLMAuthError(f"{spec}: authentication refused, HTTP {status}{hint}: {message}")
    return LLMRequestError(f"{spec}: request rejected, HTTP {status}: {message}", status=status)


def parse_retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(float(value), 0.0) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to our own backoff


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _clean_message(i: int, m: Any, tools: bool) -> dict[str, Any]:
    """One message in the neutral form. With tools: an assistant turn may carry "tool_calls"
    ([{"id", "name", "arguments": dict}]) and {"role": "tool", "tool_call_id", "content"} returns a result."""
    if tools and isinstance(m, dict) and m.get("role") == "tool":
        if not isinstance(m.get("tool_call_id"), str) or not isinstance(m.get("content"), str):
            raise LLMError(f"message {i}: a tool result needs 'tool_call_id' and 'content' strings")
        return {"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]}
    if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
        raise LLMError(f"message {i} must be {{'role': 'user'|'assistant', 'content': str}}, got {m!r:.80}")
    out: dict[str, Any] = {"role": m["role"], "content": m["content"]}
    if tools and m["role"] == "assistant" and m.get("tool_calls"):
        out["tool_calls"] = [{"id": str(c["id"]), "name": str(c["name"]), "arguments": dict(c["arguments"])}
                             for c in m["tool_calls"]]
    return out


def build_request(system: str, messages: list[dict[str, Any]], max_tokens: int, temperature: float,
                  sample: int = 0, tools: list[dict[str, Any]] | None = None, schema: dict[str, Any] | None = None,
                  tool_choice: str | None = None) -> dict[str, Any]:
    """The provider-independent request: validated, copied to plain dicts, ready to hash. `tools`:
    [{"name", "description", "parameters": JSON schema}] offered for native tool use; `tool_choice`:
    None/"auto" (the model decides) or the name of the one tool it must call (servers that ignore
    "auto" still honour a forced call). `schema`: {"name", "schema": JSON schema} the reply must
    follow, sent to servers that constrain decoding by it (structured output)."""
    if not isinstance(system, str):
        raise LLMError("system prompt must be a string")
    if not isinstance(messages, list) or not messages:
        raise LLMError("messages must be a non-empty list of {role, content} dicts")
    clean = [_clean_message(i, m, bool(tools)) for i, m in enumerate(messages)]
    if int(max_tokens) <= 0:
        raise LLMError(f"max_tokens must be positive, got {max_tokens}")
    request: dict[str, Any] = {"system": system, "messages": clean, "max_tokens": int(max_tokens),
                               "temperature": float(temperature)}
    if sample:  # distinct samples of one prompt get distinct cache keys; 0 keeps hashes stable
        request["sample"] = int(sample)
    if tools:  # absent without tools, so plain requests hash as before
        request["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                             "parameters": t.get("parameters") or {"type": "object", "properties": {}}}
                            for t in tools]
        if tool_choice not in (None, "auto"):
            if tool_choice not in {t["name"] for t in tools}:
                raise LLMError(f"tool_choice {tool_choice!r} names no offered tool")
            request["tool_choice"] = tool_choice
    if schema is not None:
        if not isinstance(schema.get("name"), str) or not isinstance(schema.get("schema"), dict):
            raise LLMError("a reply schema is {'name': str, 'schema': JSON schema}")
        request["schema"] = {"name": schema["name"], "schema": schema["schema"]}
    return request


def request_hash(request: dict[str, Any]) -> str:
    """Hash of the request alone (what replay matches on: it does not know provider or model)."""
    return sha256_hex(canonical_json(request))


def estimate_tokens(text: str) -> int:
    """A rough count (4 characters a token) for budgeting ahead and for servers that omit usage."""
    return max(1, (len(text) + 3) // 4)


def request_text(request: dict[str, Any]) -> str:
    calls = [canonical_json(m["tool_calls"]) for m in request["messages"] if m.get("tool_calls")]
    return (request["system"] + "".join(m["content"] for m in request["messages"]) + "".join(calls)
            + (canonical_json(request["tools"]) if request.get("tools") else "")
            + (canonical_json(request["schema"]) if request.get("schema") else ""))


class LLMClient:
    """Base class; ``make_client`` builds the concrete one. Thread-safe."""

    provider: str = "?"
    is_llm: bool = True
    key_hint: str = ""  # env var to mention when credentials are refused

    def __init__(self, model: str, *, cache: ResponseCache | None = None,
                 recorder: TranscriptSink | None = None, budget: Budget | None = None,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.cache = cache
        self.recorder = recorder
        self.budget = budget
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._lock = threading.Lock()
        self.stats: dict[str, float] = {"completions": 0, "requests": 0, "retries": 0, "cache_hits": 0,
                                        "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def cache_identity(self) -> str:
        """The provider part of the prompt hash (compat adds its base URL)."""
        return self.provider

    def prompt_hash(self, request: dict[str, Any]) -> str:
        return sha256_hex(canonical_json({"provider": self.cache_identity, "model": self.model,
                                          "request": request}))

    # -- adapters implement this ----------------------------------------------------------------
    def _send(self, request: dict[str, Any]) -> RawReply:
        raise NotImplementedError

    # -- the pipeline ---------------------------------------------------------------------------
    def complete(self, system: str, messages: list[dict[str, Any]], *, max_tokens: int = 2048,
                 temperature: float = 0.0, sample: int = 0, tools: list[dict[str, Any]] | None = None,
                 schema: dict[str, Any] | None = None, tool_choice: str | None = None) -> Completion:
        """One reply. With `tools` the model may answer with tool calls (Completion.tool_calls); with
        `schema` ({"name", "schema"}) a server that supports structured output constrains the reply to it
        (the caller's parser still checks it)."""
        request = build_request(system, messages, max_tokens, temperature, sample, tools, schema, tool_choice)
        phash = self.prompt_hash(request)
        if self.cache is not None:
            hit = self.cache.get(phash)
            if hit is not None:
                completion = Completion(
                    text=hit["text"], provider=self.provider, model=hit["model"],
                    input_tokens=hit["input_tokens"], output_tokens=hit["output_tokens"],
                    cost_usd=hit["cost_usd"], cached=True, prompt_hash=phash, replayed=False,
                    finish_reason=hit.get("finish_reason"), usage_estimated=hit.get("usage_estimated", False),
                    tool_calls=tuple(hit.get("tool_calls") or ()))
                self._account(completion, request)
                return completion
        self._charge_before(request)
        started = time.monotonic()
        raw, attempts = self._send_with_retries(request)
        usage_estimated = raw.input_tokens is None or raw.output_tokens is None
        input_tokens = raw.input_tokens if raw.input_tokens is not None else estimate_tokens(request_text(request))
        output_tokens = raw.output_tokens if raw.output_tokens is not None else estimate_tokens(raw.text)
        model = raw.model or self.model
        cost = cost_usd(self.provider, self.model, input_tokens, output_tokens)
        if cost is None and model != self.model:
            cost = cost_usd(self.provider, model, input_tokens, output_tokens)
        completion = Completion(
            text=raw.text, provider=self.provider, model=model, input_tokens=input_tokens,
            output_tokens=output_tokens, cost_usd=cost, cached=False, prompt_hash=phash, replayed=False,
            finish_reason=raw.finish_reason, attempts=attempts, latency_s=time.monotonic() - started,
            usage_estimated=usage_estimated, tool_calls=tuple(raw.tool_calls or ()))
        if self.budget is not None:  # already used: recorded even past the limit (settle)
            self.budget.settle("tokens", input_tokens + output_tokens)
            if cost is not None:
                self.budget.settle("usd", cost)
        if self.cache is not None:
            self.cache.put(phash, self.provider, self.model, request, {
                "text": raw.text, "model": model, "input_tokens": input_tokens,
                "output_tokens": output_tokens, "cost_usd": cost, "finish_reason": raw.finish_reason,
                "usage_estimated": usage_estimated, **({"tool_calls": raw.tool_calls} if raw.tool_calls else {})})
        self._account(completion, request)
        return completion

    def _charge_before(self, request: dict[str, Any]) -> None:
        """Refuse a call the budget cannot take: no calls left, or the worst case (estimated input +
        max_tokens) would pass the token or dollar limit. Then charge the call."""
        if self.budget is None:
            return
        worst_tokens = estimate_tokens(request_text(request)) + request["max_tokens"]
        if not self.budget.can_afford("tokens", worst_tokens):
            raise BudgetExceeded("tokens", self.budget.limits["tokens"] or 0,
                                 self.budget.spent()["tokens"], worst_tokens)
        worst_usd = cost_usd(self.provider, self.model, worst_tokens - request["max_tokens"],
                             request["max_tokens"])
        if worst_usd is not None and not self.budget.can_afford("usd", worst_usd):
            raise BudgetExceeded("usd", self.budget.limits["usd"] or 0, self.budget.spent()["usd"], worst_usd)
        self.budget.charge("calls")

    def _send_with_retries(self, request: dict[str, Any]) -> tuple[RawReply, int]:
        attempts = 0

        def attempt() -> RawReply:
            nonlocal attempts
            if attempts and self.budget is not None:
                self.budget.check_time()  # do not keep retrying past the wall-time limit
            attempts += 1
            with self._lock:
                self.stats["requests"] += 1
                self.stats["retries"] += attempts > 1
            return self._send(request)

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return self.retry.wait_s(state.attempt_number, getattr(exc, "retry_after_s", None))

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(max(self.retry.attempts, 1)), wait=wait,
            retry=tenacity.retry_if_exception_type(TransientError), sleep=self._sleep, reraise=True)
        try:
            return retrying(attempt), attempts
        except TransientError as e:
            raise LLMRequestError(f"{self.spec}: request failed after {attempts} attempt(s): {e}",
                                  status=e.status, attempts=attempts) from None

    def _account(self, completion: Completion, request: dict[str, Any]) -> None:
        with self._lock:
            self.stats["completions"] += 1
            self.stats["cache_hits"] += completion.cached
            self.stats["input_tokens"] += completion.input_tokens
            self.stats["output_tokens"] += completion.output_tokens
            self.stats["cost_usd"] += completion.cost_usd or 0.0
        if self.recorder is not None:
            self.recorder.write(transcript_entry(completion, request))

    def complete_parsed(self, system: str, messages: list[dict[str, Any]], parse: Callable[[str], T],
                        **kw: Any) -> tuple[T, list[Completion]]:
        """Complete and parse. On ValueError the reply and the error go back to the model once;
        a second failure raises LLMReplyError carrying both completions."""
        first = self.complete(system, messages, **kw)
        try:
            return parse(first.text), [first]
        except ValueError as e:
            first_error = one_line(e, 1000)
        retry_messages = list(messages) + [
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": PARSE_FEEDBACK.format(error=first_error)}]
        second = self.complete(system, retry_messages, **kw)
        try:
            return parse(second.text), [first, second]
        except ValueError as e:
            second_error = one_line(e, 1000)
        raise LLMReplyError(f"{self.spec}: reply could not be parsed twice: {one_line(second_error, 200)}",
                            [first, second], [first_error, second_error])


def reply_tokens(client: Any, default: int, call_seconds: float | None = None) -> int:
    """max_tokens for one reply: `default`, or less where the client knows its server's measured speed
    (a local model: what fits a call of `call_seconds`, leka.llm.local.local_limits), so a slow model's reply
    ends within its step's time instead of running to a cap it cannot reach."""
    limits = getattr(client, "limits", None)
    if not callable(limits):
        return default
    return min(default, int(limits(call_seconds=call_seconds)["max_tokens"]))


def transcript_entry(completion: Completion, request: dict[str, Any]) -> dict[str, Any]:
    """One JSONL line of a recorded transcript (see record.py)."""
    return {
        "v": 1, "ts": time.time(), "prompt_hash": completion.prompt_hash,
        "request_hash": request_hash(request), "provider": completion.provider, "model": completion.model,
        "request": request,
        "reply": {"text": completion.text, "finish_reason": completion.finish_reason,
                  **({"tool_calls": list(completion.tool_calls)} if completion.tool_calls else {})},
        "usage": {"input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens,
                  "estimated": completion.usage_estimated},
        "cost_usd": completion.cost_usd, "cached": completion.cached, "replayed": completion.replayed,
        "attempts": completion.attempts,
    }
