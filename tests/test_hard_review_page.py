"""The review page against DNS rebinding: a request whose `Host` is not the address served,
or a POST from another `Origin`, is a 403 that carries neither the page's token nor writes a
label; through a real HTTP client against the real server on 127.0.0.1
(docs/calibrating-the-judge.md, "Labelling in the browser")."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.calibration_support import judged_run
from verdryx_core.judge.calibration import judged_samples
from verdryx_core.judge.calibration.labels import output_sha256
from verdryx_core.judge.review import ReviewServer

RUN = judged_run([(0.9, "Sure."), (0.2, "No.")], run_id="r1")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ReviewServer]:
    with ReviewServer(judged_samples(RUN), tmp_path / "r.labels.jsonl") as running:
        yield running


def _request(
    server: ReviewServer,
    method: str,
    path: str,
    *,
    host: str | None,
    origin: str | None = None,
    body: bytes | None = None,
    token: str | None = None,
) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.httpd.server_address[1], timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            connection.putheader("Host", host)
        if origin is not None:
            connection.putheader("Origin", origin)
        if token is not None:
            connection.putheader("X-Verdryx-Token", token)
        if body is not None:
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8", "replace")
    finally:
        connection.close()


def _label() -> bytes:
    score = RUN.scores[0]
    return json.dumps(
        {
            "eval_set_id": score.eval_set_id,
            "case_id": score.case_id,
            "output_sha256": output_sha256(score.output or ""),
            "label": "fail",
        }
    ).encode()


def _port(server: ReviewServer) -> int:
    return int(server.httpd.server_address[1])


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", None]
)
def test_a_page_asked_for_under_another_host_name_is_refused_without_the_token(
    server: ReviewServer, host: str | None
) -> None:
    status, body = _request(
        server, "GET", "/", host=None if host is None else host.format(port=_port(server))
    )
    assert status == 403
    assert server.token not in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_the_page_is_served_under_its_own_address(server: ReviewServer, host: str) -> None:
    status, body = _request(server, "GET", "/", host=host.format(port=_port(server)))
    assert status == 200 and server.token in body


def test_a_rebinding_page_cannot_write_a_label_even_with_the_token(server: ReviewServer) -> None:
    port = _port(server)
    rebound = f"evil.example:{port}"
    status, _ = _request(
        server,
        "POST",
        "/label",
        host=rebound,
        origin=f"http://{rebound}",
        body=_label(),
        token=server.token,
    )
    assert status == 403
    # The Host right, the Origin another site's (or a sandboxed frame's `null`).
    for origin in (f"http://{rebound}", "null", f"https://127.0.0.1:{port}"):
        status, _ = _request(
            server,
            "POST",
            "/label",
            host=f"127.0.0.1:{port}",
            origin=origin,
            body=_label(),
            token=server.token,
        )
        assert status == 403, origin
    assert not server.labels_path.exists()


def test_the_page_s_own_post_writes_its_label(server: ReviewServer) -> None:
    port = _port(server)
    for name in ("127.0.0.1", "localhost"):
        status, body = _request(
            server,
            "POST",
            "/label",
            host=f"{name}:{port}",
            origin=f"http://{name}:{port}",
            body=_label(),
            token=server.token,
        )
        assert (status, json.loads(body)) == (200, {"labelled": 1})
    assert [label.label for label in server.labels()] == ["fail", "fail"]
