"""A fake Anthropic Messages API on 127.0.0.1 for tests and benchmarks.

The real SDK talks to it through `base_url`. It speaks HTTP/1.1 keep-alive and sends status,
headers and body in ONE write (split writes cost a keep-alive client ~40 ms a call through
delayed ACK, which would hide real concurrency figures). It checks the shape of every request
the SDK sends and records a violation (answered with a 400) for anything the real API would
reject or verdryx should never send, so tests assert `server.violations == []`.

Behaviour is scripted: `script(...)` queues replies served first-in first-out; after that the
default answers by request kind (a judge request gets a `record_verdict` call, a request with
tools gets `tool_use` blocks, anything else a text echo). `responder` replaces the default.

The Message Batches endpoints the SDK uses are served too: POST /v1/messages/batches, GET
/v1/messages/batches/{id} (`in_progress` for `batch_polls` retrievals, then `ended` with its
`results_url`) and GET that URL (JSONL, one line per request: `succeeded` with the message the
default (or `responder`) would answer, or the result type `batch_outcomes` scripts for a
custom id: `errored`, `expired` or `canceled`).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from . import scripted
from .scripted import Reply, ScriptedServer, hang_reply

__all__ = [
    "GARBAGE",
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "error_reply",
    "garbage_reply",
    "hang_reply",
    "message_body",
    "message_reply",
]

DEFAULT_KEY = "sk-ant-fake-0123456789abcdef"
_MESSAGE_IDS = itertools.count(1)
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BATCH_PATH = re.compile(
    r"^/v1/messages/batches(?:/(?P<id>[A-Za-z0-9_]+)(?:(?P<results>/results)|(?P<cancel>/cancel))?)?$"
)
_TOP_LEVEL = frozenset(
    {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "temperature"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest(scripted.RecordedRequest):
    @property
    def user_text(self) -> str:
        content = self.body["messages"][-1]["content"]
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content)


def message_body(
    *,
    text: str | None = None,
    tool_uses: Iterable[tuple[str, Any]] = (),
    usage: tuple[int, int] = (10, 5),
    stop_reason: str | None = None,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Messages API response body."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for index, (name, data) in enumerate(tool_uses):
        content.append(
            {"type": "tool_use", "id": f"toolu_{index:04d}", "name": name, "input": data}
        )
    if stop_reason is None:
        stop_reason = (
            "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
        )
    return {
        # Unique, as the real API's are: a reader may tell two responses apart by their id.
        "id": f"msg_fake_{next(_MESSAGE_IDS):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def message_reply(**kwargs: Any) -> Reply:
    return Reply(body=message_body(**kwargs))


def error_reply(
    status: int,
    kind: str,
    message: str,
    *,
    retry_after: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    extra = dict(headers or {})
    if retry_after is not None:
        extra["retry-after"] = retry_after
    return Reply(
        status=status,
        body={"type": "error", "error": {"type": kind, "message": message}},
        headers=extra,
    )


#: Answers a broken provider or a misrouted proxy gives: the adapter must turn each into one
#: `ModelCallError` line (docs/troubleshooting.md, "Reliability").
GARBAGE: dict[str, Reply] = {
    "truncated json": Reply(raw=b'{"id": "msg_1", "type": "message", "content": [{"ty'),
    "html page": Reply(
        raw=b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
        content_type="text/html; charset=utf-8",
    ),
    "empty object": Reply(body={}),
    "empty body": Reply(raw=b""),
    "json array": Reply(raw=b"[1, 2, 3]"),
    "json null": Reply(raw=b"null"),
    "wrong content type": Reply(
        raw=json.dumps(message_body(text="hello")).encode(), content_type="text/plain"
    ),
    "content not a list": Reply(body={**message_body(text="x"), "content": "not a list"}),
    "block without type": Reply(body={**message_body(text="x"), "content": [{"text": 5}]}),
    "usage is a string": Reply(body={**message_body(text="x"), "usage": "lots"}),
    "not utf-8": Reply(raw=b"\xff\xfe{\x00}"),
    "deep nesting": Reply(raw=b"[" * 100_000),
    "html error 500": Reply(
        status=500, raw=b"<html>Internal Server Error</html>", content_type="text/html"
    ),
}


def garbage_reply(
    data: bytes, *, status: int = 200, content_type: str = "application/json"
) -> Reply:
    """An arbitrary body (a fuzzer's bytes) as the answer."""
    return Reply(status=status, raw=data, content_type=content_type)


def _tool_ids(content: Any, kind: str, key: str) -> list[Any]:
    if not isinstance(content, list):
        return []
    return [
        part.get(key) for part in content if isinstance(part, dict) and part.get("type") == kind
    ]


def _conversation_problems(messages: list[Any]) -> list[str]:
    """The tool loop's rules: a tool_result answers a tool_use of the assistant turn just
    before it, and every tool_use of that turn is answered."""
    problems: list[str] = []
    for index, item in enumerate(messages):
        if not isinstance(item, dict):
            continue
        results = _tool_ids(item.get("content"), "tool_result", "tool_use_id")
        if not results:
            continue
        before = messages[index - 1] if index > 0 else None
        asked = (
            _tool_ids(before.get("content"), "tool_use", "id") if isinstance(before, dict) else []
        )
        if item.get("role") != "user":
            problems.append(f"messages[{index}] carries tool_result but is not a user turn")
        for tool_use_id in results:
            if tool_use_id not in asked:
                problems.append(
                    f"messages[{index}] has a tool_result for {tool_use_id!r}, which the "
                    "assistant turn before it did not call"
                )
        for tool_use_id in asked:
            if tool_use_id not in results:
                problems.append(f"messages[{index}] does not answer tool_use {tool_use_id!r}")
    return problems


def _shape_problems(body: Any) -> list[str]:
    """What the real Messages API would reject, or verdryx should never send."""
    if not isinstance(body, dict):
        return [f"body is {type(body).__name__}, expected an object"]
    problems = [f"unexpected top-level field {key!r}" for key in sorted(set(body) - _TOP_LEVEL)]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model missing or not a string")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append(f"max_tokens {max_tokens!r} is not a positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages missing or empty")
    else:
        for index, item in enumerate(messages):
            if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
                problems.append(f"messages[{index}] has no valid role")
            elif not isinstance(item.get("content"), str | list):
                problems.append(f"messages[{index}].content is not a string or list")
        if isinstance(messages[0], dict) and messages[0].get("role") != "user":
            problems.append("the first message is not from the user")
        problems += _conversation_problems(messages)
    if "system" in body and not isinstance(body["system"], str | list):
        problems.append("system is not a string or list")
    names: list[str] = []
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list):
            problems.append("tools is not a list")
            tools = []
        for index, tool in enumerate(tools):
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str) or not _TOOL_NAME.match(name):
                problems.append(f"tools[{index}].name {name!r} is not a valid tool name")
                continue
            names.append(name)
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                problems.append(f"tools[{index}].input_schema is not an object schema")
    if "tool_choice" in body:
        choice = body["tool_choice"]
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            problems.append(f"tool_choice type {kind!r} is not valid")
        elif kind == "tool" and choice.get("name") not in names:
            problems.append(f"tool_choice names {choice.get('name')!r}, which is not in tools")
    if "temperature" in body:
        value = body["temperature"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            problems.append(f"temperature {value!r} is not a number in [0, 1]")
    return problems


class FakeAnthropic(ScriptedServer):
    """Use as `with FakeAnthropic(latency=0.05) as server:` and point the SDK at `server.url`."""

    recorded = RecordedRequest
    reply_headers: ClassVar[Mapping[str, str]] = {"request-id": "req_fake_0001"}
    phrases: ClassVar[Mapping[int, str]] = {529: "Overloaded"}
    credential_headers = ("x-api-key", "authorization")
    endpoint = "/v1/messages"
    error_reply = staticmethod(error_reply)
    api_key: str

    def __init__(
        self,
        *,
        api_key: str = DEFAULT_KEY,
        latency: float = 0.0,
        judge_score: Any = 0.75,
        judge_reason: str = "fake judge reason",
        tool_calls: Sequence[str] | None = None,
        usage: tuple[int, int] = (10, 5),
        hang: bool = False,
    ) -> None:
        super().__init__(api_key=api_key, latency=latency, hang=hang)
        self.judge_score = judge_score
        self.judge_reason = judge_reason
        self.tool_calls = tool_calls
        self.usage = usage
        #: Retrievals a batch answers `in_progress` before it has `ended`.
        self.batch_polls = 1
        #: custom_id -> "errored" | "expired" | "canceled": that request's result type.
        self.batch_outcomes: dict[str, str] = {}
        #: batch id -> its requests ({"custom_id", "params"}), in order.
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self._batch_polled: dict[str, int] = {}
        #: Batch ids the client asked to cancel.
        self.canceled: list[str] = []

    def env(self, *, api_key: str | None = None) -> dict[str, str]:
        """The environment `make_adapter` needs to talk to this server."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": self.api_key if api_key is None else api_key,
        }

    # -- the server side -------------------------------------------------------------------

    def _credential(self, headers: Any) -> str | None:
        key = headers.get("x-api-key")
        if key is None:
            auth = headers.get("authorization") or ""
            key = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
            if auth.startswith("Basic "):
                # A proxy URL's user:password (httpx sends it as basic auth): the password
                # is the credential.
                decoded = base64.b64decode(auth[len("Basic ") :]).decode("utf-8", "replace")
                key = decoded.partition(":")[2]
        return key

    def _answer(self, request: Any, credential: str | None) -> Reply:
        if request.path.startswith("/v1/messages/batches"):
            return self._batch(request, credential)
        return super()._answer(request, credential)

    def _header_problems(self, headers: Mapping[str, str]) -> list[str]:
        return [] if "anthropic-version" in headers else ["no anthropic-version header"]

    def _body_problems(self, body: Any) -> list[str]:
        return _shape_problems(body)

    def _refused(self, credential: str | None) -> Reply:
        return error_reply(401, "authentication_error", "invalid x-api-key")

    # -- message batches -------------------------------------------------------------------

    def _batch(self, request: RecordedRequest, credential: str | None) -> Reply:
        match = _BATCH_PATH.match(request.path)
        problems: list[str] = []
        if match is None:
            problems.append(f"{request.method} {request.path}: no such batch endpoint")
        elif match.group("id") is None and request.method != "POST":
            problems.append(f"{request.method} {request.path}: only POST creates a batch")
        elif match.group("cancel") is not None and request.method != "POST":
            problems.append(f"{request.method} {request.path}: only POST cancels a batch")
        elif (
            match.group("id") is not None
            and match.group("cancel") is None
            and request.method != "GET"
        ):
            problems.append(f"{request.method} {request.path}: only GET reads a batch")
        if "anthropic-version" not in request.headers:
            problems.append("no anthropic-version header")
        if match is not None and match.group("id") is None and not problems:
            problems += self._batch_problems(request.body)
        self._record(request, problems)
        if problems:
            return self._invalid(problems)
        if credential != self.api_key:
            return self._refused(credential)
        assert match is not None
        batch_id = match.group("id")
        if batch_id is None:
            with self._lock:
                batch_id = f"msgbatch_fake{len(self.batches) + 1:04d}"
                self.batches[batch_id] = list(request.body["requests"])
                self._batch_polled[batch_id] = 0
            return Reply(body=self._batch_object(batch_id, ended=False))
        with self._lock:
            known = batch_id in self.batches
            if known and match.group("cancel"):
                self.canceled.append(batch_id)
            elif known and not match.group("results"):
                self._batch_polled[batch_id] += 1
            ended = known and self._batch_polled[batch_id] > self.batch_polls
        if not known:
            return error_reply(404, "not_found_error", f"no batch {batch_id}")
        if match.group("cancel"):
            canceling = {"processing_status": "canceling"}
            return Reply(body=self._batch_object(batch_id, ended=False) | canceling)
        if not match.group("results"):
            return Reply(body=self._batch_object(batch_id, ended=ended))
        if not ended:
            return error_reply(404, "not_found_error", f"batch {batch_id} has not ended")
        lines = [json.dumps(self._batch_line(item)) for item in self.batches[batch_id]]
        return Reply(raw=("\n".join(lines) + "\n").encode(), content_type="application/x-jsonl")

    def _batch_problems(self, body: Any) -> list[str]:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return ["requests missing or empty"]
        problems: list[str] = []
        seen: set[str] = set()
        for index, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                problems.append(f"requests[{index}].custom_id {custom_id!r} is not valid")
            elif custom_id in seen:
                problems.append(f"requests[{index}].custom_id {custom_id!r} is used twice")
            else:
                seen.add(custom_id)
            params = item.get("params") if isinstance(item, dict) else None
            problems += [f"requests[{index}].params: {p}" for p in _shape_problems(params)]
        return problems

    def _batch_object(self, batch_id: str, *, ended: bool) -> dict[str, Any]:
        requests = self.batches[batch_id]
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            for item in requests:
                counts[self.batch_outcomes.get(item["custom_id"], "succeeded")] += 1
        else:
            counts["processing"] = len(requests)
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _batch_line(self, item: Mapping[str, Any]) -> dict[str, Any]:
        custom_id = item["custom_id"]
        outcome = self.batch_outcomes.get(custom_id, "succeeded")
        if outcome == "errored":
            result: dict[str, Any] = {
                "type": "errored",
                "error": {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "scripted batch error"},
                },
            }
        elif outcome in ("expired", "canceled"):
            result = {"type": outcome}
        else:
            request = RecordedRequest(
                method="POST",
                path="/v1/messages",
                headers={},
                body=item["params"],
                received_at=time.monotonic(),
                client_port=0,
            )
            reply = (self.responder or self._default)(request)
            result = {"type": "succeeded", "message": dict(reply.body or {})}
        return {"custom_id": custom_id, "result": result}

    def _default(self, request: RecordedRequest) -> Reply:
        body = request.body
        choice = body.get("tool_choice") or {}
        if choice.get("name") == "record_verdict":
            verdict = {"score": self.judge_score, "reason": self.judge_reason}
            return message_reply(tool_uses=[("record_verdict", verdict)], usage=self.usage)
        if body.get("tools"):
            names = self.tool_calls
            if names is None:
                names = [body["tools"][0]["name"]]
            return message_reply(
                text="Let me look that up.",
                tool_uses=[(name, {}) for name in names],
                usage=self.usage,
            )
        return message_reply(text=f"echo: {request.user_text}", usage=self.usage)


def rendezvous(server: FakeAnthropic, parties: int) -> None:
    """Hold each request at the server until `parties` are in flight together, so reaching a
    bound does not depend on how fast a busy machine starts its threads. A client that never
    has `parties` in flight breaks the barrier (after its timeout) and the test sees a lower
    `max_in_flight`; one with more in flight shows more."""
    barrier = threading.Barrier(parties, timeout=10)

    def respond(request: RecordedRequest) -> Reply:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return message_reply(text=f"echo: {request.user_text}")

    server.responder = respond


def main(argv: Sequence[str] | None = None) -> int:
    """Serve in a process of its own (benchmarks: the client then has the GIL to itself, as
    with a remote provider). Prints the URL, serves until stdin closes, then prints one JSON
    line: {"requests": N, "violations": [...]}."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="fake Anthropic Messages API")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--api-key", default=DEFAULT_KEY)
    args = parser.parse_args(argv)
    with FakeAnthropic(latency=args.latency, api_key=args.api_key) as server:
        print(server.url, flush=True)
        sys.stdin.read()
        summary = {"requests": len(server.requests), "violations": server.violations}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
