"""The adapter for OpenAI and any endpoint speaking its chat-completions protocol.

The reply is requested as structured output (``response_format`` with the reply's JSON schema,
``strict``; the limit as ``max_completion_tokens``, which current models require); the message
content is the JSON text, and a tool call's arguments are accepted too
for servers that answer that way. The SDK reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``
itself (a local server still needs some key value); its own retries are off.
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

DEFAULT_MODEL = "gpt-5.4-mini"
NAME = "openai"


class OpenAIProvider:
    """Chat completions through the official ``openai`` SDK (imported only when used)."""

    provider = NAME

    def __init__(self, model: str | None, *, timeout_s: float) -> None:
        try:
            import openai
        except ImportError:
            raise ProviderUnavailableError(
                NAME, "the openai SDK is not installed; pip install 'knowbase[llm]'"
            ) from None
        self._sdk = openai
        self.model = model or DEFAULT_MODEL
        try:
            self._client = openai.OpenAI(max_retries=0, timeout=timeout_s)
        except openai.OpenAIError:
            raise ProviderUnavailableError(
                NAME, "no API key: set OPENAI_API_KEY (any value for a local server)"
            ) from None

    def send(self, request: LlmRequest, max_tokens: int) -> Completion:
        """One chat-completions call asking for the reply schema as structured output."""
        sdk = self._sdk
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                max_completion_tokens=max_tokens,
                messages=[
                    {"role": "system", "content": request.system},
                    {"role": "user", "content": request.user},
                ],
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        "name": request.tool_name,
                        "schema": dict(request.schema),
                        "strict": True,
                    },
                },
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
        usage = response.usage
        return Completion(
            value=_reply_value(response),
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )


def _reply_value(response: Any) -> Any:
    """The first choice's content, else its first tool call's arguments (both JSON text)."""
    if not response.choices:
        return ""
    message = response.choices[0].message
    if message.content:
        return message.content
    calls = getattr(message, "tool_calls", None) or []
    for call in calls:
        function = getattr(call, "function", None)
        if function is not None and function.arguments:
            return function.arguments
    return message.refusal or ""
