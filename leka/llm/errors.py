"""LLM errors. All are LekaError subclasses so the CLI prints them as one line."""
from __future__ import annotations

from typing import TYPE_CHECKING

from leka.errors import LekaError
from leka.errors import one_line as one_line  # noqa: F401 - the one definition; LLM code imports it from here

if TYPE_CHECKING:
    from leka.llm.base import Completion


class LLMError(LekaError):
    """Base of the LLM client errors."""


class LLMConfigError(LLMError):
    """Unusable client spec: unknown provider, missing API key or base URL, unknown pricing file."""


class LLMAuthError(LLMError):
    """The server refused the credentials (401/403). Never retried."""


class LLMRequestError(LLMError):
    """The request failed: a client error (4xx, never retried) or retries exhausted (429/5xx/timeout)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status, self.attempts = status, attempts


class LLMReplyError(LLMError):
    """The reply could not be parsed, twice: once as sent, once after the parse error was fed back."""

    def __init__(self, message: str, completions: "list[Completion]", errors: list[str]) -> None:
        super().__init__(message)
        self.completions = completions
        self.errors = errors


class ReplayError(LLMError):
    """A transcript cannot be replayed: missing/malformed file, or no recorded reply for a prompt."""
