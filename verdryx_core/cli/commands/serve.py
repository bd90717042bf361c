"""`verdryx serve`: the hosted verification service (docs/verification-service.md).

Needs the `serve` extra (uvicorn and Starlette), imported only here, when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from verdryx_core.cli.commands._common import add_db_argument
from verdryx_core.cli.commands._service import open_service_storage
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
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (info)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from verdryx_core.addons.service.app import DEFAULT_MAX_BODY_BYTES, create_app
    except ImportError as exc:
        raise UsageError(f"{_INSTALL_HINT} ({exc})") from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0 to 65535, got {args.port}")
    limit = args.max_body_bytes if args.max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    if limit < 1024:
        raise UsageError(f"--max-body-bytes must be at least 1024, got {limit}")
    path, storage = open_service_storage(args.db)
    with storage:
        app = create_app(storage, max_body_bytes=limit)
        print(
            f"verdryx verification service on http://{args.host}:{args.port} (store {path}); "
            "API keys: `verdryx keys create --name N`",
            file=sys.stderr,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0
