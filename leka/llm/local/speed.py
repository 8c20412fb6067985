"""The local model's measured speed, and the per-call limits sized from it.

``measure_speed`` runs once after a server starts (stored in its state file): a streamed reply to a short
prompt gives generation tokens/s (one chunk is one token in llama.cpp's stream; the first chunk's latency is
left out), then a long prompt with max_tokens=1 gives prompt tokens/s. It is one sample on a machine that
may be busy: size limits with a margin (``local_limits``).
"""
from __future__ import annotations

import os
import time
from typing import Any

from leka.llm.errors import LLMConfigError

# A model call's share of a step when nothing else says (LEKA_LOCAL_CALL_S), the prompt size assumed for
# the agent's layer prompts with history, and the bounds of max_tokens sized from the speed.
DEFAULT_CALL_S = 30.0
DEFAULT_PROMPT_TOKENS = 2048
MIN_TOKENS, MAX_TOKENS = 128, 4096
GENERATION_PROBE_TOKENS = 48
_PROBE_TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps by the warm fire. "


def _generation_rate(sdk: Any, model: str) -> tuple[float, int]:
    stream = sdk.chat.completions.create(
        model=model, stream=True, max_tokens=GENERATION_PROBE_TOKENS, temperature=0.0,
        messages=[{"role": "user", "content": "Count from 1 to 100, separated by commas: 1, 2, 3,"}])
    stamps = [time.monotonic() for chunk in stream
              if chunk.choices and (chunk.choices[0].delta.content or "")]
    if len(stamps) < 2:
        return 0.0, len(stamps)
    return (len(stamps) - 1) / max(stamps[-1] - stamps[0], 1e-6), len(stamps)


def _prompt_rate(sdk: Any, model: str) -> tuple[float, int]:
    started = time.monotonic()
    resp = sdk.chat.completions.create(model=model, max_tokens=1, temperature=0.0,
                                       messages=[{"role": "user", "content": _PROBE_TEXT * 24 + "Summarise."}])
    elapsed = time.monotonic() - started
    tokens = int(getattr(resp.usage, "prompt_tokens", 0) or 0) if resp.usage else 0
    return (tokens / elapsed if elapsed > 0 else 0.0), tokens


def measure_speed(base_url: str, model: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """{"prompt_tokens_per_s", "generation_tokens_per_s", "probe_prompt_tokens", "probe_generated_tokens",
    "measured_at"} of the server at `base_url` (the generation probe first: it also warms the model up)."""
    import openai

    sdk = openai.OpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=timeout_s)
    try:
        gen_rate, generated = _generation_rate(sdk, model)
        prompt_rate, prompted = _prompt_rate(sdk, model)
    except openai.OpenAIError as e:
        from leka.llm.local.server import LocalServerError

        raise LocalServerError(f"the model server answered the speed probe with an error: {e}") from None
    return {"prompt_tokens_per_s": round(prompt_rate, 1), "generation_tokens_per_s": round(gen_rate, 1),
            "probe_prompt_tokens": prompted, "probe_generated_tokens": generated, "measured_at": time.time()}


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        out = float(value)
    except ValueError:
        out = -1.0
    if not out > 0:
        raise LLMConfigError(f"{name}={value!r}: expected a positive number")
    return out


def local_limits(server: Any, *, prompt_tokens: int = DEFAULT_PROMPT_TOKENS, call_seconds: float | None = None,
                 max_tokens: int | None = None, margin: float = 1.5) -> dict[str, Any]:
    """{"max_tokens", "seconds_per_call", "prompt_tokens_per_s", "generation_tokens_per_s"} for calls to a
    local server (a ServerState, or a spec "local:MODEL" / "MODEL" of a running one).

    max_tokens (argument, else LEKA_LOCAL_MAX_TOKENS) is what fits a call of call_seconds (argument, else
    LEKA_LOCAL_CALL_S, else DEFAULT_CALL_S) after reading a prompt of prompt_tokens, within [MIN_TOKENS,
    MAX_TOKENS]; seconds_per_call is the time such a call is expected to take, times `margin`."""
    speed = _speed_of(server)
    prompt_tps = float(speed.get("prompt_tokens_per_s") or 0)
    gen_tps = float(speed.get("generation_tokens_per_s") or 0)
    if prompt_tps <= 0 or gen_tps <= 0:
        raise LLMConfigError("the local server's speed was not measured (restart it: leka llm serve)")
    prompt_s = prompt_tokens / prompt_tps
    if max_tokens is None:
        env_tokens = _env_float("LEKA_LOCAL_MAX_TOKENS")
        if env_tokens is not None:
            max_tokens = int(env_tokens)
    if max_tokens is None:
        budget_s = call_seconds or _env_float("LEKA_LOCAL_CALL_S") or DEFAULT_CALL_S
        max_tokens = int(min(max((budget_s - prompt_s) * gen_tps, MIN_TOKENS), MAX_TOKENS))
    seconds = (prompt_s + max_tokens / gen_tps) * margin
    return {"max_tokens": int(max_tokens), "seconds_per_call": round(seconds, 1),
            "prompt_tokens_per_s": prompt_tps, "generation_tokens_per_s": gen_tps}


def _speed_of(server: Any) -> dict[str, Any]:
    if isinstance(server, str):
        from leka.llm.local.models import parse_model
        from leka.llm.local.server import find_server

        model = server.split(":", 1)[1] if server.startswith("local:") else server
        state = find_server(parse_model(model).key)
        if state is None:
            raise LLMConfigError(f"no local model server of {model} is running (leka llm serve --model {model})")
        server = state
    return getattr(server, "speed", None) or {}
