"""Local HTTP servers that speak the wire protocols knowbase's model passes talk to.

The real ``anthropic`` and ``openai`` SDK adapters are exercised against these, in-process, on
loopback (``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``), and ``kb mine --prs`` against the GitHub
one (``KB_GITHUB_API_URL``): no network, no mocks of the SDKs. Each server records every request
(path, headers, JSON body), can be told to answer the next requests with an error status (e.g.
429 with ``retry-after-ms``), and answers the rest with ``reply(body)`` — by default the stub
provider's reply to the request's user text, so the claim floor sees the same mix of genuine and
fabricated claims as with ``KB_LLM_PROVIDER=stub``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kb_resources.llm.stub import StubConfig, stub_reply

Reply = Callable[[dict[str, Any]], Any]


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeServer:
    """State shared by a fake server's handler threads."""

    reply: Reply
    requests: list[Recorded] = field(default_factory=list)
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """(status, headers) to answer the next requests with, first first."""
    in_flight: int = 0
    max_in_flight: int = 0
    tool_use: bool = False
    """Anthropic only: answer with a ``tool_use`` block instead of JSON text."""
    gate: threading.Barrier | None = None
    """When set, every request waits here first (to prove concurrency)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def fail_next(self, status: int, count: int = 1, headers: Mapping[str, str] | None = None) -> None:
        """Answer the next ``count`` requests with ``status``."""
        self.failures.extend([(status, dict(headers or {}))] * count)

    @property
    def calls(self) -> int:
        """Requests received so far (failures included)."""
        return len(self.requests)


def user_text(body: Mapping[str, Any]) -> str:
    """The user message text of an Anthropic Messages or OpenAI chat request."""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def stub_like(body: dict[str, Any]) -> Any:
    """The stub provider's reply to the request (genuine claim + fabricated ones)."""
    return stub_reply(user_text(body), StubConfig())


def anthropic_message(body: Mapping[str, Any], value: Any, *, tool_use: bool = False) -> dict[str, Any]:
    """A Messages API response: the reply as JSON text (structured output), or as a tool's input."""
    if isinstance(value, str) or not tool_use:
        text = value if isinstance(value, str) else json.dumps(value)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        stop = "end_turn"
    else:
        content = [{"type": "tool_use", "id": "toolu_01", "name": "record_knowledge", "input": value}]
        stop = "tool_use"
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100 + len(user_text(body)) // 4, "output_tokens": 50},
    }


def openai_completion(body: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """A chat-completions response whose message content is the reply's JSON text."""
    text = value if isinstance(value, str) else json.dumps(value)
    prompt_tokens = 100 + len(user_text(body)) // 4
    return {
        "id": "chatcmpl-01",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 50,
            "total_tokens": prompt_tokens + 50,
        },
    }


Respond = Callable[[str, str, dict[str, Any]], tuple[int, Any]]
RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


def _handler(state: FakeServer, respond: Respond) -> type:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            with state.lock:
                state.requests.append(Recorded(method, self.path, dict(self.headers.items()), body))
                failure = state.failures.pop(0) if state.failures else None
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                if state.gate is not None:
                    with suppress(threading.BrokenBarrierError):
                        state.gate.wait(timeout=10)
                if failure is not None:
                    status, headers = failure
                    payload: Any = {
                        "type": "error",
                        "error": {"type": "rate_limit_error", "message": "slow down"},
                    }
                else:
                    status, payload = respond(method, self.path, body)
                    headers = {}
            finally:
                with state.lock:
                    state.in_flight -= 1
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self._serve("POST")

        def do_GET(self) -> None:
            self._serve("GET")

    return Handler


@contextmanager
def _serve(
    state: FakeServer, respond: Callable[[str, str, dict[str, Any]], tuple[int, Any]]
) -> Iterator[FakeServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, respond))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-server", daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def fake_anthropic(reply: Reply = stub_like) -> Iterator[FakeServer]:
    """A Messages API server (``POST /v1/messages``); point ``ANTHROPIC_BASE_URL`` at ``.url``."""
    state = FakeServer(reply)

    def respond(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if method != "POST" or path.split("?", maxsplit=1)[0] != "/v1/messages":
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
        return 200, anthropic_message(body, state.reply(body), tool_use=state.tool_use)

    with _serve(state, respond) as served:
        yield served


@contextmanager
def fake_openai(reply: Reply = stub_like) -> Iterator[FakeServer]:
    """A chat-completions server (``POST /v1/chat/completions``); ``OPENAI_BASE_URL`` = ``.url + "/v1"``."""
    state = FakeServer(reply)

    def respond(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if method != "POST" or path.split("?", maxsplit=1)[0] != "/v1/chat/completions":
            return 404, {"error": {"message": path, "type": "invalid_request_error"}}
        return 200, openai_completion(body, state.reply(body))

    with _serve(state, respond) as served:
        yield served


@contextmanager
def fake_github(pulls: Mapping[tuple[str, str, int], Mapping[str, Any]]) -> Iterator[FakeServer]:
    """A GitHub REST API serving ``GET /repos/OWNER/NAME/pulls/N`` from ``pulls`` (else 404)."""
    state = FakeServer(lambda body: None)

    def respond(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        parts = path.split("?", maxsplit=1)[0].strip("/").split("/")
        if method == "GET" and len(parts) == 5 and parts[0] == "repos" and parts[3] == "pulls":
            found = pulls.get((parts[1], parts[2], int(parts[4])))
            if found is not None:
                return 200, dict(found)
        return 404, {"message": "Not Found"}

    with _serve(state, respond) as served:
        yield served
