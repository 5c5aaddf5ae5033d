"""The deterministic stub provider (``KB_LLM_PROVIDER=stub``): the gates' model.

Its reply is a pure function of the request: a summary naming the prompt's first line, ONE
genuine claim (the first ``def``/``class`` name in the prompt's code, else its first identifier —
a name the target's code really holds), and three fabricated claims the floor must always drop:
a made-up name, a claim with no symbol, and a real name next to a made-up one. ``KB_LLM_STUB``
(JSON) adds to it, for tests: ``{"claims": [...]}`` appended to every reply, ``"genuine": false``
to leave the genuine claim out, ``"malformed": ["text", ...]`` to answer a prompt containing one
of those strings with something that is not the reply schema. It counts its calls.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.llm.identifiers import code_chains
from kb_assets.core.models import JSON
from kb_resources.llm.base import Completion, LlmRequest, ProviderUnavailableError

DEFAULT_MODEL = "kb-stub-1"
NAME = "stub"
FABRICATED_NAME = "kb_stub_fabricated_helper"

_CODE = re.compile(r"```python\n(.*?)```", re.DOTALL)
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)

FABRICATED_CLAIMS: tuple[dict[str, JSON], ...] = (
    {"text": "It delegates the work to a helper.", "symbols": [FABRICATED_NAME]},
    {"text": "It is fast and well tested.", "symbols": []},
)


@dataclass(frozen=True)
class StubConfig:
    """What a test asks of the stub (``KB_LLM_STUB``)."""

    claims: tuple[Mapping[str, JSON], ...] = ()
    genuine: bool = True
    malformed: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: str) -> StubConfig:
        """Read ``KB_LLM_STUB`` (empty: the defaults)."""
        if not raw.strip():
            return cls()
        try:
            data = json.loads(raw)
        except ValueError:
            raise ProviderUnavailableError(NAME, "KB_LLM_STUB is not JSON") from None
        return cls(
            claims=tuple(data.get("claims", ())),
            genuine=bool(data.get("genuine", True)),
            malformed=tuple(data.get("malformed", ())),
        )


def genuine_symbol(user: str) -> str | None:
    """The name the stub's genuine claim cites: first definition in the code shown, else the
    smallest identifier chain of it."""
    code = "\n".join(_CODE.findall(user))
    defined = _DEFINED.findall(code)
    if defined:
        return str(defined[0])
    chains = sorted(code_chains(code))
    return chains[0] if chains else None


def stub_reply(user: str, config: StubConfig) -> JSON:
    """The stub's reply to a prompt (a JSON object, or a non-reply string when asked to be bad)."""
    if any(marker in user for marker in config.malformed):
        return "I cannot answer that in JSON."
    first = user.strip().splitlines()[0] if user.strip() else "the target"
    symbol = genuine_symbol(user)
    claims: list[JSON] = []
    if config.genuine and symbol is not None:
        claims.append({"text": f"The code defines or uses {symbol}.", "symbols": [symbol]})
    claims += [dict(c) for c in FABRICATED_CLAIMS]
    if symbol is not None:
        claims.append({"text": f"{symbol} calls a helper.", "symbols": [symbol, f"{FABRICATED_NAME}.run"]})
    claims += [dict(c) for c in config.claims]
    return {"summary": f"Stub summary of {first}.", "claims": claims}


CALLS = [0]
"""Every ``StubProvider.send`` of this process (tests count model calls made inside Dagster runs)."""


class StubProvider:
    """A provider that answers with ``stub_reply`` and never touches the network."""

    provider = NAME

    def __init__(self, model: str | None, config: StubConfig) -> None:
        self.model = model or DEFAULT_MODEL
        self.config = config
        self.calls = 0
        self._lock = threading.Lock()

    def send(self, request: LlmRequest, max_tokens: int) -> Completion:
        """Answer deterministically; tokens are counted as whitespace-separated words."""
        with self._lock:
            self.calls += 1
            CALLS[0] += 1
        value = stub_reply(request.user, self.config)
        out = json.dumps(value)
        return Completion(
            value=value,
            input_tokens=len(request.system.split()) + len(request.user.split()),
            output_tokens=min(max_tokens, len(out.split())),
        )
