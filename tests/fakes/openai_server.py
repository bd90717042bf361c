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

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from . import scripted
from .scripted import Reply, ScriptedServer, hang_reply

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
class RecordedRequest(scripted.RecordedRequest):
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


def _tool_pairing_problems(messages: list[Any]) -> list[str]:
    """The tool loop's rules: the `tool` messages right after an assistant message with
    `tool_calls` answer each of its call ids once, and a `tool` message answers a call."""
    problems: list[str] = []
    waiting: list[Any] = []
    for index, item in enumerate(messages):
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        if role == "tool":
            call_id = item.get("tool_call_id")
            if call_id not in waiting:
                problems.append(
                    f"messages[{index}] answers tool_call_id {call_id!r}, which the assistant "
                    "message before it did not make (or was answered already)"
                )
            else:
                waiting.remove(call_id)
            continue
        if waiting:
            problems.append(f"messages[{index}] comes before tool_call {waiting[0]!r} is answered")
        waiting = []
        if role == "assistant":
            for call in item.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if call.get("type") != "function" or not isinstance(function, dict):
                    problems.append(f"messages[{index}] has a tool call that is not a function")
                    continue
                try:
                    arguments = json.loads(function.get("arguments"))
                except (TypeError, ValueError):
                    arguments = None
                if not isinstance(arguments, dict):
                    problems.append(f"messages[{index}] has call arguments that are not JSON text")
                if not isinstance(call.get("id"), str) or not call["id"]:
                    problems.append(f"messages[{index}] has a tool call without an id")
                waiting.append(call.get("id"))
    if waiting:
        problems.append(f"tool_call {waiting[0]!r} is never answered")
    return problems


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
        problems += _tool_pairing_problems(messages)
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


class FakeOpenAI(ScriptedServer):
    """Use as `with FakeOpenAI() as server:`; point the SDK at `server.base_url`.

    `api_key=None` accepts any credential, as a local server (Ollama, vLLM) does."""

    recorded = RecordedRequest
    reply_headers: ClassVar[Mapping[str, str]] = {"x-request-id": "req_fake_openai_0001"}
    endpoint = "/v1/chat/completions"
    error_reply = staticmethod(error_reply)

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
        super().__init__(api_key=api_key, latency=latency, hang=hang)
        #: The record_verdict arguments (a JSON value, or a str sent verbatim).
        self.judge_arguments = (
            {"score": 0.75, "reason": "fake judge reason"}
            if judge_arguments is None
            else judge_arguments
        )
        self.tool_calls = tool_calls
        self.usage = usage

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

    # -- the server side -------------------------------------------------------------------

    def _body_problems(self, body: Any) -> list[str]:
        return _shape_problems(body)

    def _refused(self, credential: str | None) -> Reply:
        return error_reply(
            401,
            "invalid_request_error",
            f"Incorrect API key provided: {credential}.",
            code="invalid_api_key",
        )

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
