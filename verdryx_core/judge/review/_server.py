"""The review server: the stdlib's HTTP server on 127.0.0.1 only, one page and one route that
appends a label (docs/calibrating-the-judge.md, "Labelling in the browser").

Labels are appended to the labels file one whole line at a time (`append_label`), under a
lock so two clicks at once never interleave; the page is rebuilt from the file on every
load, so a reload shows what is labelled.

Listening on 127.0.0.1 is not enough against DNS rebinding: a page of `evil.example` whose
name then resolves to 127.0.0.1 is, to the browser, the same origin as its own server, and
could read the page (and its token) and post labels. So every request must name this server
in its `Host` (`127.0.0.1:PORT` or `localhost:PORT`), and a POST that carries an `Origin`
must come from one of those two; anything else is a 403 before the page or the labels file
is touched.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from verdryx_core.judge.calibration.labels import (
    Label,
    LabelError,
    append_label,
    read_labels,
)
from verdryx_core.judge.calibration.samples import JudgedSample
from verdryx_core.judge.review._page import review_items, review_page
from verdryx_core.untrusted.json_input import parse_json

__all__ = ["ReviewServer"]

#: The only address served: the page writes files, so it is never reachable from elsewhere.
HOST: Final = "127.0.0.1"
#: The largest label request read (a note is a sentence, not a file).
MAX_BODY: Final = 64 * 1024


class ReviewServer:
    """Serves the review page of `samples` until `close`; `port` 0 picks a free one."""

    def __init__(
        self,
        samples: Sequence[JudgedSample],
        labels_path: Path,
        *,
        prompts: Mapping[str, str] | None = None,
        title: str = "verdryx review",
        labeler: str = "",
        port: int = 0,
    ) -> None:
        self.samples = list(samples)
        self.labels_path = labels_path
        self.prompts = dict(prompts or {})
        self.title = title
        self.labeler = labeler
        self.token = secrets.token_urlsafe(24)
        self._known = {(s.eval_set_id, s.case_id, s.output_sha256) for s in self.samples}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.httpd = ThreadingHTTPServer((HOST, port), _handler(self))

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/"

    def served_hosts(self) -> frozenset[str]:
        """The `Host` values that name this server (lowercase): its address and `localhost`,
        with the port (without it too on port 80, where a browser leaves it out)."""
        port = self.httpd.server_address[1]
        names = (HOST, "localhost")
        hosts = {f"{name}:{port}" for name in names}
        if port == 80:
            hosts.update(names)
        return frozenset(hosts)

    def foreign_request(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these `Host` and `Origin` headers is not for this page (a DNS
        rebinding page, another site's script), or None. `origin` is None for a GET, and for
        a POST without one (not a browser page: browsers send it with every POST)."""
        hosts = self.served_hosts()
        if host is None or host.strip().lower() not in hosts:
            return f"this page is served only at {self.url} (Host {host!r} is not this server)"
        if origin is not None and origin.strip().lower() not in {f"http://{h}" for h in hosts}:
            return f"labels are accepted only from {self.url} (Origin {origin!r})"
        return None

    def labels(self) -> list[Label]:
        return read_labels([self.labels_path]) if self.labels_path.exists() else []

    def page(self) -> str:
        items = review_items(self.samples, self.labels(), self.prompts)
        return review_page(items, title=self.title, token=self.token)

    def add(self, body: Any) -> int:
        """Append the label `body` asks for; the count of judged samples now labelled."""
        if not isinstance(body, dict):
            raise LabelError("the request: expected a JSON object")
        key = (body.get("eval_set_id"), body.get("case_id"), body.get("output_sha256"))
        if key not in self._known:
            raise LabelError("the request: no judged sample of this run has that case and output")
        value = body.get("label")
        if value not in ("pass", "fail", "skip"):
            raise LabelError("the request: field 'label': expected pass, fail or skip")
        note = body.get("note") or ""
        if not isinstance(note, str):
            raise LabelError("the request: field 'note': expected a string")
        label = Label(
            eval_set_id=str(key[0]),
            case_id=str(key[1]),
            output_sha256=str(key[2]),
            label=value,
            labeler=self.labeler,
            note=note[:2000],
        )
        with self._lock:
            append_label(self.labels_path, label)
            labelled = {(x.eval_set_id, x.case_id, x.output_sha256) for x in self.labels()}
        return len(labelled & self._known)

    def start(self) -> ReviewServer:
        """Serve in a background thread (tests, and the command until Ctrl-C)."""
        # `close` waits for the loop to look up: at the default half second, most of what
        # serving a page or two costs.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(server: ReviewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the command prints what matters; a request log would drown it

        def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _refused(self, *, post: bool) -> bool:
            """Answer 403 to a request that is not for this page; True when it was refused."""
            why = server.foreign_request(
                self.headers.get("Host"), self.headers.get("Origin") if post else None
            )
            if why is None:
                return False
            self.close_connection = True  # a refused POST's body is never read as a request
            self._send(
                HTTPStatus.FORBIDDEN, why.encode("utf-8", "replace"), "text/plain; charset=utf-8"
            )
            return True

        def do_GET(self) -> None:
            if self._refused(post=False):
                return
            if self.path != "/":
                self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain; charset=utf-8")
                return
            try:
                page = server.page()
            except LabelError as exc:
                self._send(
                    HTTPStatus.INTERNAL_SERVER_ERROR, str(exc).encode(), "text/plain; charset=utf-8"
                )
                return
            self._send(HTTPStatus.OK, page.encode("utf-8"), "text/html; charset=utf-8")

        def do_POST(self) -> None:
            plain = "text/plain; charset=utf-8"
            if self._refused(post=True):
                return
            if self.path != "/label":
                self._send(HTTPStatus.NOT_FOUND, b"not found", plain)
                return
            if not secrets.compare_digest(self.headers.get("X-Verdryx-Token", ""), server.token):
                self._send(HTTPStatus.FORBIDDEN, b"missing or wrong token", plain)
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 < length <= MAX_BODY:
                self._send(HTTPStatus.BAD_REQUEST, b"a label request is 1 byte to 64 KiB", plain)
                return
            try:
                labelled = server.add(parse_json(self.rfile.read(length), allow_nan=False))
            except (ValueError, LabelError) as exc:
                self._send(HTTPStatus.BAD_REQUEST, str(exc).encode("utf-8", "replace"), plain)
                return
            self._send(HTTPStatus.OK, b'{"labelled": %d}' % labelled, "application/json")

    return Handler
