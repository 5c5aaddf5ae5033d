"""What every language-model adapter speaks: one request, one completion, and three kinds of failure.

An adapter (``Provider``) sends exactly one request and maps its SDK's errors onto these:
``TransientError`` (rate limit, overload, server error, connection: retried with backoff by
``LlmClient``), ``RequestFailedError`` (the request itself was refused: the target is skipped and
counted) and ``ProviderUnavailableError`` (no SDK, no key, key refused: the command stops with
one line, exit 2). API keys are read by the SDKs from their own environment variables; nothing
here ever holds, logs or stores one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kb_assets.core.errors import BadInputError, KbError
from kb_assets.core.models import JSON


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """One request: instructions, the user text, and the JSON schema the reply must follow."""

    system: str
    user: str
    tool_name: str
    schema: Mapping[str, JSON]
    max_tokens: int = 0
    """0: the client's configured limit."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A provider's answer: the reply (a decoded object from tool use / structured output, or
    text) and what it cost in tokens."""

    value: JSON
    input_tokens: int
    output_tokens: int
    retries: int = 0


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """Which model to use and how to call it (from ``Settings``; never a key)."""

    provider: str
    model: str | None
    max_tokens: int
    concurrency: int
    max_retries: int
    timeout_s: float
    price: str | None = None
    stub: str = ""


class Provider(Protocol):
    """One model endpoint behind one SDK."""

    provider: str
    model: str

    def send(self, request: LlmRequest, max_tokens: int) -> Completion:
        """Send one request (no retries); raise one of this module's errors on failure."""
        ...


class ProviderUnavailableError(BadInputError):
    """The provider cannot be used at all: SDK not installed, no key, key refused (exit 2)."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason


class TransientError(KbError):
    """A failure worth retrying (429, 529, 5xx, connection); ``retry_after`` from the server."""

    def __init__(self, status: int | None, detail: str, retry_after: float | None = None) -> None:
        super().__init__(f"transient model error {status or 'connection'}: {detail}")
        self.status = status
        self.retry_after = retry_after


class RequestFailedError(KbError):
    """The model endpoint refused this request (or retries ran out): the target is skipped."""

    def __init__(self, status: int | None, detail: str) -> None:
        super().__init__(f"model request failed ({status or 'no status'}): {detail}")
        self.status = status
        self.detail = detail


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The server's ``retry-after-ms`` / ``retry-after`` (seconds) hint, if it gave one."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            continue
    return None


def error_detail(err: object) -> str:
    """A short, key-free description of an SDK error (its first message line)."""
    message = str(getattr(err, "message", "") or err)
    return message.splitlines()[0][:200] if message else type(err).__name__
