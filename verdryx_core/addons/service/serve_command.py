"""`verdryx serve`: the hosted verification service (docs/verification-service.md).

Needs the `serve` extra (uvicorn and Starlette), imported only here, when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from verdryx_core.addons.service.command_storage import open_service_storage
from verdryx_core.addons.service.server_limits import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_KEEP_ALIVE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
    ServerLimits,
    connection_budget,
)
from verdryx_core.cli.commands._common import add_db_argument, float_argument
from verdryx_core.errors import UsageError

NAME = "serve"
HELP = "run the verification service: re-check evidence bundles over HTTP, keep a ledger"

_INSTALL_HINT = (
    "`verdryx serve` needs the 'serve' extra (uvicorn and Starlette): pip install 'verdryx[serve]'"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    add_db_argument(parser)
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        metavar="N",
        help="refuse request bodies larger than N bytes with 413 (default 16 MiB)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float_argument(),
        default=DEFAULT_HEADER_TIMEOUT_S,
        metavar="S",
        help="close a connection whose request line and headers are not whole S seconds after "
        f"it opened (or after its previous answer), with 408 ({DEFAULT_HEADER_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--body-timeout",
        type=float_argument(),
        default=DEFAULT_BODY_TIMEOUT_S,
        metavar="S",
        help="close a connection whose request body is not whole S seconds after its headers, "
        f"or that reads none of its answer for S seconds, with 408 ({DEFAULT_BODY_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=int,
        default=DEFAULT_KEEP_ALIVE_TIMEOUT_S,
        metavar="S",
        help=f"close a keep-alive connection idle for S seconds ({DEFAULT_KEEP_ALIVE_TIMEOUT_S})",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="serve at most N connections at once: past it a new connection evicts the oldest "
        "one that has not sent its headers, else it is refused with 503 "
        f"({DEFAULT_MAX_CONNECTIONS}; lowered to what `ulimit -n` allows)",
    )
    parser.add_argument(
        "--max-header-bytes",
        type=int,
        default=DEFAULT_MAX_HEADER_BYTES,
        metavar="N",
        help="refuse a request line and headers longer than N bytes with 431 "
        f"({DEFAULT_MAX_HEADER_BYTES}, at least 1024)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (info)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from verdryx_core.addons.service.app import DEFAULT_MAX_BODY_BYTES, create_app
        from verdryx_core.addons.service.http_server import server_config
    except ImportError as exc:
        raise UsageError(f"{_INSTALL_HINT} ({exc})") from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0 to 65535, got {args.port}")
    limit = args.max_body_bytes if args.max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    if limit < 1024:
        raise UsageError(f"--max-body-bytes must be at least 1024, got {limit}")
    if args.max_connections < 1:
        raise UsageError(f"--max-connections must be at least 1, got {args.max_connections}")
    connections, lowered = connection_budget(args.max_connections)
    limits = ServerLimits(
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
        max_connections=connections,
        max_header_bytes=args.max_header_bytes,
    )
    path, storage = open_service_storage(args.db)
    with storage:
        app = create_app(storage, max_body_bytes=limit)
        if lowered:
            print(f"note: {lowered}", file=sys.stderr)
        print(
            f"verdryx verification service on http://{args.host}:{args.port} (store {path}); "
            "API keys: `verdryx keys create --name N`",
            file=sys.stderr,
        )
        config = server_config(
            app, host=args.host, port=args.port, limits=limits, log_level=args.log_level
        )
        uvicorn.Server(config).run()
    return 0
