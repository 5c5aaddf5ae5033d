"""``LlmClient``: one provider behind a concurrency limit, retries with backoff, and a price.

Retries are deterministic (no jitter): attempt ``n`` waits ``min(BACKOFF_CAP_S, BACKOFF_BASE_S *
2**n)`` seconds, or longer when the server's ``retry-after`` says so. The SDKs' own retries are
switched off so this is the only retry loop, and ``sleep`` is injectable so tests never wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from kb_resources.llm.base import Completion, LlmRequest, Provider, RequestFailedError, TransientError
from kb_resources.llm.pricing import Price

BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based)."""
    delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * float(2**attempt))
    return max(delay, min(retry_after or 0.0, 4 * BACKOFF_CAP_S))


@dataclass
class Usage:
    """What a pass spent: calls, retries, tokens in and out, and the estimated cost."""

    calls: int = 0
    retries: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, completion: Completion) -> None:
        """Count one completed call."""
        self.calls += 1
        self.retries += completion.retries
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens

    def cost(self, price: Price | None) -> float | None:
        """Estimated USD (None when the model's price is unknown)."""
        return price.cost(self.input_tokens, self.output_tokens) if price is not None else None


class LlmClient:
    """A provider with a concurrency limit and retries; safe to share between threads."""

    def __init__(
        self,
        provider: Provider,
        *,
        max_tokens: int,
        concurrency: int,
        max_retries: int,
        price: Price | None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self.concurrency = max(1, concurrency)
        self.max_retries = max(0, max_retries)
        self.price = price
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(self.concurrency)

    @property
    def model_id(self) -> str:
        """``provider:model``: identity-bearing in every unit this client's replies produce."""
        return f"{self.provider.provider}:{self.provider.model}"

    def complete(self, request: LlmRequest) -> Completion:
        """Send ``request``, retrying transient failures; raise ``RequestFailedError`` when spent."""
        limit = request.max_tokens or self.max_tokens
        for attempt in range(self.max_retries + 1):
            with self._slots:
                try:
                    completion = self.provider.send(request, limit)
                except TransientError as err:
                    if attempt == self.max_retries:
                        raise RequestFailedError(err.status, f"gave up after {attempt + 1} tries") from err
                    delay = backoff_delay(attempt, err.retry_after)
                else:
                    return replace(completion, retries=attempt)
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover
