"""The ASGI face of the verification service (Starlette): routes, body limits, JSON errors.

Imported only by `verdryx serve` and the tests, so installing verdryx without the `serve`
extra costs nothing. Every answer that is not a success is `{"error": "one message"}`; the
verification work and the storage (SQLite or PostgreSQL) run in the thread pool, never on
the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from verdryx_core.addons.contracts.model import Limits
from verdryx_core.addons.service.core import RefusedRequestError, VerificationService
from verdryx_core.addons.service.openapi import openapi_document
from verdryx_core.addons.service.storage import ApiKey, ServiceStorage
from verdryx_core.errors import StoreError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

#: 16 MiB: a bundle keeps at most 256 KiB per file, so this is about 48 whole files (base64
#: costs a third more) with room for listings; `verdryx serve --max-body-bytes` raises it.
DEFAULT_MAX_BODY_BYTES: Final = 16 * 1024 * 1024

_log = logging.getLogger("verdryx.service")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _size(n: int) -> str:
    return f"{n} bytes ({n / 1024 / 1024:g} MiB)" if n >= 1024 * 1024 else f"{n} bytes"


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed `limit` (never buffered
    past it, whatever Content-Length claims)."""
    too_large = RefusedRequestError(
        413,
        f"request body is larger than the server's limit of {_size(limit)}; "
        "collect a smaller bundle or start the server with a larger --max-body-bytes",
    )
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise RefusedRequestError(400, "Content-Length is not a number")
        if int(declared) > limit:
            raise too_large
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
    except ClientDisconnect:
        # The client left, or the server's body deadline closed the connection
        # (http_server.py): the answer goes nowhere, and this is no server error.
        raise RefusedRequestError(400, "the connection closed before the body was whole") from None
    return b"".join(chunks)


Handler = Callable[[Request, ApiKey], Awaitable[Response]]


def create_app(
    storage: ServiceStorage,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    limits: Limits | None = None,
) -> Starlette:
    service = VerificationService(storage, limits=limits)
    document = openapi_document()

    def authenticated(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                key = await run_in_threadpool(
                    service.authenticate, request.headers.get("authorization")
                )
                return await handler(request, key)
            except RefusedRequestError as exc:
                return _error(exc.status, exc.message)
            except StoreError as exc:
                _log.error("storage error: %s", exc)
                return _error(503, "the server's storage is unavailable; try again later")

        return endpoint

    async def create_contract(request: Request, key: ApiKey) -> Response:
        body = await _read_body(request, max_body_bytes)
        status, answer = await run_in_threadpool(service.create_contract, key, body)
        return JSONResponse(answer, status_code=status)

    async def submit_run(request: Request, key: ApiKey) -> Response:
        contract_id = request.path_params["contract_id"]
        body = await _read_body(request, max_body_bytes)
        answer = await run_in_threadpool(service.submit_run, key, contract_id, body)
        return JSONResponse(answer, status_code=201)

    async def get_verdict(request: Request, key: ApiKey) -> Response:
        contract_id = request.path_params["contract_id"]
        answer = await run_in_threadpool(service.latest_verdict, key, contract_id)
        return JSONResponse(answer)

    async def list_verdicts(request: Request, key: ApiKey) -> Response:
        params = request.query_params
        repeated = sorted({name for name in params if len(params.getlist(name)) > 1})
        if repeated:
            raise RefusedRequestError(
                400, f"query parameter {repeated[0]!r} is given more than once"
            )
        answer = await run_in_threadpool(service.ledger, key, dict(params))
        return JSONResponse(answer)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        messages = {404: "no such endpoint; see /openapi.json", 405: "method not allowed here"}
        return _error(exc.status_code, messages.get(exc.status_code, str(exc.detail)))

    async def server_error(request: Request, exc: Exception) -> Response:
        _log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal error; the server log has the details")

    routes: list[Any] = [
        Route("/healthz", health, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/v1/contracts", authenticated(create_contract), methods=["POST"]),
        Route("/v1/contracts/{contract_id}/runs", authenticated(submit_run), methods=["POST"]),
        Route("/v1/contracts/{contract_id}/verdict", authenticated(get_verdict), methods=["GET"]),
        Route("/v1/verdicts", authenticated(list_verdicts), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    # Starlette answers `/v1/verdicts/` with a redirect to the URL without the slash, built
    # from the request's Host header: whoever sends the request chooses where it points (an
    # open redirect). No route here needs one: a path that is not an endpoint is a 404.
    app.router.redirect_slashes = False
    return app
