"""A typryx-like typed verdict service on 127.0.0.1 for tests.

Speaks the wire contract of typryx's `internal/api` that docs/typed-grader.md describes:
`POST /v1/ask`, `POST /v1/outcome`, `GET /v1/templates`, `GET /healthz`; every route but
healthz wants `X-Typryx-Key`, else 401 `{"error":"unauthorized"}`; error bodies are
`{"error": code}` only. HTTP/1.1 keep-alive, status + headers + body in ONE write.

Answers are scripted: `script(...)` queues replies for `/v1/ask` first-in first-out; after
that each template answers by its type with `p_true` (noul), `levels` (score) or `options`
(choice). Outcomes are checked as typryx checks them (bool for noul, an int level for score)
and kept in `outcomes`.
"""

from __future__ import annotations

import http
import json
import threading
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .loopback import LoopbackHandler, LoopbackServer

__all__ = ["DEFAULT_KEY", "FakeTypryx", "RecordedRequest", "Reply", "Template"]

DEFAULT_KEY = "typryx-test-key-5f2c9a"


@dataclass(frozen=True, slots=True, kw_only=True)
class Template:
    type: str
    fields: tuple[str, ...] = ("task", "final_answer")
    #: noul: p(true) of the default answer.
    p_true: float = 0.8
    #: score: the default answer's probabilities by level (their count is the level count).
    levels: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4)
    #: choice: option name -> probability.
    options: Mapping[str, float] = field(default_factory=lambda: {"refund": 0.7, "escalate": 0.3})
    version: str = "3"


DEFAULT_TEMPLATES: Mapping[str, Template] = {
    "eval.outcome_met": Template(type="noul"),
    "eval.answer_quality": Template(type="score"),
    "support.route": Template(type="choice", fields=("ticket",)),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    status: int = 200
    body: Any = None
    #: Sent as is instead of `body` (to test a body that is not JSON).
    raw: bytes | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    method: str
    path: str
    #: Lower-cased names; X-Typryx-Key's value is replaced by "ok", "wrong" or left out.
    headers: Mapping[str, str]
    body: Any
    #: The key exactly as received (so a test can prove it was sent, and only as a header).
    key: str | None


class _Handler(LoopbackHandler):
    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        reply = self.server.fake._respond(self.command, self.path, self.headers, raw)
        payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        head = (
            f"HTTP/1.1 {reply.status} {http.HTTPStatus(reply.status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self.wfile.write(head.encode("latin-1") + payload)  # one write


def _error(status: int, code: str) -> Reply:
    return Reply(status=status, body={"error": code})


class FakeTypryx(LoopbackServer):
    """`with FakeTypryx() as service:` then `TypryxClient(service.url, DEFAULT_KEY)`."""

    handler = _Handler

    def __init__(
        self,
        *,
        key: str = DEFAULT_KEY,
        templates: Mapping[str, Template] | None = None,
        cost_usd: float = 0.0,
        echo_key_in_errors: bool = False,
    ) -> None:
        self.key = key
        self.templates = dict(DEFAULT_TEMPLATES if templates is None else templates)
        self.cost_usd = cost_usd
        #: A misbehaving service that puts the caller's key in its error code.
        self.echo_key_in_errors = echo_key_in_errors
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        #: answer_id -> (template id, the answer) for every answered ask.
        self._answers: dict[str, tuple[str, dict[str, Any]]] = {}
        self.outcomes: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def unanswered(self, reason: str, *, cost_usd: float | None = None) -> Reply:
        """A reply typryx gives when its backend could not answer."""
        body: dict[str, Any] = {
            "answer_id": uuid.uuid4().hex,
            "template": "eval.outcome_met",
            "template_version": "3",
            "type": "noul",
            "unanswered": True,
            "reason": reason,
            "backend": "fake",
            "model": "fake-model",
            "latency_ms": 1,
            "held_back_fields": [],
        }
        if cost_usd:
            body["cost_usd"] = cost_usd
        return Reply(body=body)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def asks(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == "/v1/ask"]

    # -- the server side -------------------------------------------------------------------

    def _respond(self, method: str, path: str, headers: Any, raw: bytes) -> Reply:
        key = headers.get("X-Typryx-Key")
        seen = {name.lower(): value for name, value in headers.items()}
        if "x-typryx-key" in seen:
            seen["x-typryx-key"] = "ok" if key == self.key else "wrong"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._requests.append(
                RecordedRequest(method=method, path=path, headers=seen, body=body, key=key)
            )
        if path == "/healthz":
            return Reply(body={"status": "ok"})
        if key != self.key:
            return _error(401, f"unauthorized {key}" if self.echo_key_in_errors else "unauthorized")
        if path == "/v1/templates":
            if method != "GET":
                return _error(405, "method_not_allowed")
            return Reply(body={"templates": [self._view(n, t) for n, t in self.templates.items()]})
        if path not in ("/v1/ask", "/v1/outcome"):
            return _error(404, "not_found")
        if method != "POST":
            return _error(405, "method_not_allowed")
        if not isinstance(body, dict):
            return _error(400, "bad_request")
        return self._ask(body) if path == "/v1/ask" else self._outcome(body)

    @staticmethod
    def _view(name: str, template: Template) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": name,
            "version": template.version,
            "type": template.type,
            "fields": list(template.fields),
            "instructions": "",
        }
        if template.type == "score":
            view["levels"] = [f"level {i}" for i in range(len(template.levels))]
        if template.type == "choice":
            view["options"] = list(template.options)
        return view

    def _ask(self, body: dict[str, Any]) -> Reply:
        name = body.get("template")
        template = self.templates.get(name) if isinstance(name, str) else None
        if template is None:
            return _error(404, "unknown_template")
        if not isinstance(body.get("state"), dict):
            return _error(400, "bad_state")
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        reply = scripted if scripted is not None else Reply(body=self._answer(name, template))
        answer = reply.body
        if reply.status == 200 and isinstance(answer, dict) and "answer_id" in answer:
            with self._lock:
                self._answers[answer["answer_id"]] = (name, answer)
        return reply

    def _answer(self, name: str, template: Template) -> dict[str, Any]:
        probabilities: dict[str, float]
        if template.type == "noul":
            probabilities = {"true": template.p_true, "false": 1 - template.p_true}
            answer: Any = template.p_true
        elif template.type == "score":
            probabilities = {str(i): p for i, p in enumerate(template.levels)}
            answer = max(range(len(template.levels)), key=lambda i: template.levels[i])
        else:
            probabilities = dict(template.options)
            answer = max(probabilities, key=probabilities.__getitem__)
        body: dict[str, Any] = {
            "answer_id": uuid.uuid4().hex,
            "template": name,
            "template_version": template.version,
            "type": template.type,
            "answer": answer,
            "probabilities": probabilities,
            "backend": "fake",
            "model": "fake-model",
            "latency_ms": 1,
            "held_back_fields": [],
        }
        if self.cost_usd:
            body["cost_usd"] = self.cost_usd
        return body

    def _outcome(self, body: dict[str, Any]) -> Reply:
        answer_id = body.get("answer_id")
        with self._lock:
            found = self._answers.get(answer_id) if isinstance(answer_id, str) else None
            exists = answer_id in self.outcomes
        if found is None:
            return _error(404, "unknown_answer")
        if exists:
            return _error(409, "outcome_exists")
        name, answer = found
        truth = body.get("truth")
        if not _truth_fits(answer, truth):
            return _error(400, "bad_truth")
        with self._lock:
            self.outcomes[answer_id] = {"truth": truth, "source": body.get("source")}
        return Reply(
            body={
                "answer_id": answer_id,
                "template": name,
                "template_version": answer.get("template_version"),
            }
        )


def _truth_fits(answer: Mapping[str, Any], truth: Any) -> bool:
    kind = answer.get("type")
    levels: Sequence[str] = list(answer.get("probabilities") or ())
    if kind == "noul":
        return isinstance(truth, bool)
    if kind == "score":
        return isinstance(truth, int) and not isinstance(truth, bool) and 0 <= truth < len(levels)
    return isinstance(truth, str) and truth in levels
