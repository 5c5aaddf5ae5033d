"""The Anthropic Messages API adapter (the default provider).

The reply is requested as structured output (``output_config.format``: a JSON schema the text
answer must follow), which current models support and which, unlike forcing a tool (refused by
Sonnet 5.5), every current model accepts; a ``tool_use`` block is accepted too, for servers that
answer that way. The SDK reads ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and
``ANTHROPIC_BASE_URL`` itself; its own retries are off (``LlmClient`` retries).
"""

from __future__ import annotations

from typing import Any

from kb_resources.llm.base import (
    Completion,
    LlmRequest,
    ProviderUnavailableError,
    RequestFailedError,
    TransientError,
    error_detail,
    retry_after_seconds,
)

DEFAULT_MODEL = "claude-sonnet-5-5"
NAME = "anthropic"


class AnthropicProvider:
    """Anthropic's Messages API through the official SDK (imported only when used)."""

    provider = NAME

    def __init__(self, model: str | None, *, timeout_s: float) -> None:
        try:
            import anthropic
        except ImportError:
            raise ProviderUnavailableError(
                NAME, "the anthropic SDK is not installed; pip install 'knowbase[llm]'"
            ) from None
        self._sdk = anthropic
        self.model = model or DEFAULT_MODEL
        missing = "no API key: set ANTHROPIC_API_KEY (or choose another KB_LLM_PROVIDER)"
        try:
            self._client = anthropic.Anthropic(max_retries=0, timeout=timeout_s)
        except anthropic.AnthropicError as err:  # e.g. a named profile that does not exist
            raise ProviderUnavailableError(NAME, f"{missing}; {error_detail(err)}") from None
        client = self._client
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise ProviderUnavailableError(NAME, missing)

    def send(self, request: LlmRequest, max_tokens: int) -> Completion:
        """One Messages API call asking for the reply schema as structured output."""
        sdk = self._sdk
        try:
            message = self._client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=request.system,
                messages=[{"role": "user", "content": request.user}],
                output_config={"format": {"type": "json_schema", "schema": dict(request.schema)}},
            )
        except (sdk.AuthenticationError, sdk.PermissionDeniedError) as err:
            raise ProviderUnavailableError(
                NAME, f"the endpoint refused the key ({err.status_code})"
            ) from None
        except (sdk.RateLimitError, sdk.InternalServerError) as err:
            raise TransientError(
                err.status_code, error_detail(err), retry_after_seconds(err.response.headers)
            ) from None
        except sdk.APIConnectionError as err:
            raise TransientError(None, type(err).__name__) from None
        except sdk.APIStatusError as err:
            raise RequestFailedError(err.status_code, error_detail(err)) from None
        return Completion(
            value=_reply_value(message.content),
            input_tokens=int(message.usage.input_tokens or 0),
            output_tokens=int(message.usage.output_tokens or 0),
        )


def _reply_value(blocks: list[Any]) -> Any:
    """A tool's input when the server answered with one, else the concatenated text blocks."""
    texts = []
    for block in blocks:
        if block.type == "tool_use":
            return block.input
        if block.type == "text":
            texts.append(block.text)
    return "\n".join(texts)
