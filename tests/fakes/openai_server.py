"""A fake OpenAI chat-completions API on 127.0.0.1 for tests and benchmarks.

The real `openai` SDK talks to it through `base_url` (`server.base_url`, which ends in `/v1`
as OpenAI's does). Like the fake Anthropic server it speaks HTTP/1.1 keep-alive, sends each
reply in one write, checks the shape of every request and records a violation (answered with
a 400) for anything the real API would reject, so tests assert `server.violations == []`.

Behaviour is scripted: `script(...)` queues replies served first-in first-out; after that
the default answers by request kind (a forced `record_verdict` call gets a verdict, a request
with tools gets function calls, anything else a text echo); `responder` replaces the default;
`hang=True` (or a scripted `hang_reply()`) accepts a request and never answers.
"""

from __future__ import annotations

import http
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .loopback import LoopbackHandler, LoopbackServer

__all__ = [
    "DEFAULT_KEY",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "completion_body",
    "completion_reply",
    "error_reply",
    "hang_reply",
]

DEFAULT_KEY = "sk-proj-fake-0123456789abcdef"
_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOP_LEVEL = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
    }
)
_ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    status: int = 200
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Extra seconds before answering, on top of the server's latency.
    delay: float = 0.0
    #: Accept the request and never answer (until the server stops).
    hang: bool = False
    #: Garbage mode: these bytes are the body as is, sent with `content_type`.
    raw: bytes | None = None
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    method: str
    path: str
    #: Lower-cased names; the authorization header's value is replaced by "ok" or "wrong".
    headers: Mapping[str, str]
    body: Any
    received_at: float
    client_port: int

    @property
    def user_text(self) -> str:
        return str(self.body["messages"][-1].get("content") or "")


def completion_body(
    *,
    text: str | None = None,
    calls: Iterable[tuple[str, Any]] = (),
    usage: tuple[int, int] = (10, 5),
    cached_tokens: int = 0,
    finish_reason: str | None = None,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A chat.completion body; each call's arguments are JSON-encoded unless already a str."""
    tool_calls = [
        {
            "id": f"call_{index:04d}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": data if isinstance(data, str) else json.dumps(data),
            },
        }
        for index, (name, data) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }


def completion_reply(**kwargs: Any) -> Reply:
    return Reply(body=completion_body(**kwargs))


def error_reply(
    status: int,
    kind: str,
    message: str,
    *,
    code: str | None = None,
    retry_after: str | None = None,
) -> Reply:
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return Reply(
        status=status,
        body={"error": {"message": message, "type": kind, "param": None, "code": code}},
        headers=headers,
    )


def hang_reply() -> Reply:
    return Reply(hang=True)


def _shape_problems(body: Any) -> list[str]:
    """What the real chat-completions API would reject, or verdryx should never send."""
    if not isinstance(body, dict):
        return [f"body is {type(body).__name__}, expected an object"]
    problems = [f"unexpected top-level field {key!r}" for key in sorted(set(body) - _TOP_LEVEL)]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model missing or not a string")
    if "max_tokens" in body and "max_completion_tokens" in body:
        problems.append("both max_tokens and max_completion_tokens are set")
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body:
            value = body[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.append(f"{key} {value!r} is not a positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages missing or empty")
    else:
        for index, item in enumerate(messages):
            if not isinstance(item, dict) or item.get("role") not in _ROLES:
                problems.append(f"messages[{index}] has no valid role")
                continue
            content = item.get("content")
            if item["role"] == "assistant" and content is None and item.get("tool_calls"):
                continue
            if not isinstance(content, str | list):
                problems.append(f"messages[{index}].content is not a string or list")
    names: list[str] = []
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not tools:
            problems.append("tools is not a non-empty list")
            tools = []
        for index, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or tool.get("type") != "function" or not function:
                problems.append(f"tools[{index}] is not a function tool")
                continue
            name = function.get("name")
            if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
                problems.append(f"tools[{index}].function.name {name!r} is not valid")
                continue
            names.append(name)
            parameters = function.get("parameters")
            if parameters is not None and (
                not isinstance(parameters, dict) or parameters.get("type") != "object"
            ):
                problems.append(f"tools[{index}].function.parameters is not an object schema")
    if "tool_choice" in body:
        choice = body["tool_choice"]
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if choice.get("type") != "function" or name not in names:
                problems.append(f"tool_choice names {name!r}, which is not in tools")
        elif choice not in ("auto", "none", "required"):
            problems.append(f"tool_choice {choice!r} is not valid")
    if "temperature" in body:
        value = body["temperature"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
            problems.append(f"temperature {value!r} is not a number in [0, 2]")
    return problems


class _Handler(LoopbackHandler):
    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake._enter()
        try:
            reply = fake._respond(
                self.command, self.path, self.headers, raw, self.client_address[1]
            )
            if reply.hang:
                fake._stopping.wait()
                self.close_connection = True
                return
            pause = fake.latency + reply.delay
            if pause > 0:
                time.sleep(pause)
            self._send(reply)
        finally:
            fake._leave()

    def _send(self, reply: Reply) -> None:
        if reply.raw is not None:
            payload = reply.raw
        else:
            payload = json.dumps(reply.body if reply.body is not None else {}).encode()
        try:
            phrase = http.HTTPStatus(reply.status).phrase
        except ValueError:
            phrase = "Unknown"
        headers = {
            "Content-Type": reply.content_type,
            "Content-Length": str(len(payload)),
            "x-request-id": "req_fake_openai_0001",
            **reply.headers,
        }
        head = f"HTTP/1.1 {reply.status} {phrase}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        # One write: status, headers and body leave together.
        self.wfile.write(head.encode("latin-1") + b"\r\n" + payload)


class FakeOpenAI(LoopbackServer):
    """Use as `with FakeOpenAI() as server:`; point the SDK at `server.base_url`.

    `api_key=None` accepts any credential, as a local server (Ollama, vLLM) does."""

    handler = _Handler

    def __init__(
        self,
        *,
        api_key: str | None = DEFAULT_KEY,
        latency: float = 0.0,
        judge_arguments: Any = None,
        tool_calls: Sequence[str] | None = None,
        usage: tuple[int, int] = (10, 5),
        hang: bool = False,
    ) -> None:
        self.api_key = api_key
        self.latency = latency
        #: The record_verdict arguments (a JSON value, or a str sent verbatim).
        self.judge_arguments = (
            {"score": 0.75, "reason": "fake judge reason"}
            if judge_arguments is None
            else judge_arguments
        )
        self.tool_calls = tool_calls
        self.usage = usage
        self.hang = hang
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._violations: list[str] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self, *, api_key: str | None = None) -> dict[str, str]:
        """The environment `make_adapter` needs to talk to this server."""
        key = api_key if api_key is not None else self.api_key
        env = {"OPENAI_BASE_URL": self.base_url}
        if key is not None:
            env["OPENAI_API_KEY"] = key
        return env

    # -- scripting and inspection ----------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def violations(self) -> list[str]:
        with self._lock:
            return list(self._violations)

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    # -- the server side -------------------------------------------------------------------

    def _before_stop(self) -> None:
        self._stopping.set()

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _respond(self, method: str, path: str, headers: Any, raw: bytes, port: int) -> Reply:
        auth = headers.get("authorization") or ""
        credential = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        seen = {name.lower(): value for name, value in headers.items()}
        if "authorization" in seen:
            seen["authorization"] = "ok" if credential == self.api_key else "wrong"
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        request = RecordedRequest(
            method=method,
            path=path,
            headers=seen,
            body=body,
            received_at=time.monotonic(),
            client_port=port,
        )
        problems: list[str] = []
        if method != "POST" or path != "/v1/chat/completions":
            problems.append(f"{method} {path}: only POST /v1/chat/completions exists")
        if not seen.get("content-type", "").startswith("application/json"):
            problems.append("content-type is not application/json")
        problems += _shape_problems(body)
        with self._lock:
            self._requests.append(request)
            self._violations.extend(problems)
            scripted = self._script.popleft() if self._script else None
        if problems:
            return error_reply(400, "invalid_request_error", "; ".join(problems))
        if self.api_key is not None and credential != self.api_key:
            return error_reply(
                401,
                "invalid_request_error",
                f"Incorrect API key provided: {credential}.",
                code="invalid_api_key",
            )
        if scripted is not None:
            return scripted
        if self.hang:
            return hang_reply()
        if self.responder is not None:
            return self.responder(request)
        return self._default(request)

    def _default(self, request: RecordedRequest) -> Reply:
        body = request.body
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice["function"]["name"] == "record_verdict":
            return completion_reply(
                calls=[("record_verdict", self.judge_arguments)], usage=self.usage
            )
        if body.get("tools"):
            names = self.tool_calls
            if names is None:
                names = [body["tools"][0]["function"]["name"]]
            return completion_reply(
                text=None, calls=[(name, {"order_id": "A-1"}) for name in names], usage=self.usage
            )
        return completion_reply(text=f"echo: {request.user_text}", usage=self.usage)
