"""What `verdryx serve` bounds per connection, and how many connections it serves at once
(docs/verification-service.md, "Limits"). Plain values, free of uvicorn, so the command's
options and their defaults cost nothing to build; `http_server.py` enforces them."""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass
from typing import Final

from verdryx_core.errors import UsageError

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_KEEP_ALIVE_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "ServerLimits",
    "connection_budget",
]

#: Seconds a client has to send a request's line and headers (`--header-timeout`).
DEFAULT_HEADER_TIMEOUT_S: Final = 10.0
#: Seconds a client has to send a request's body, or to read on when its answer stalls
#: (`--body-timeout`): 16 MiB (the default body limit) in 60 s is about 270 KiB/s.
DEFAULT_BODY_TIMEOUT_S: Final = 60.0
#: Seconds an idle keep-alive connection is kept (`--keep-alive-timeout`; uvicorn's default).
DEFAULT_KEEP_ALIVE_TIMEOUT_S: Final = 5
#: Connections served at once (`--max-connections`).
DEFAULT_MAX_CONNECTIONS: Final = 100
#: Bytes of request line and headers (`--max-header-bytes`; h11's own default).
DEFAULT_MAX_HEADER_BYTES: Final = 16 * 1024

#: Descriptors kept for everything but client connections: the listening socket, the store
#: (a SQLite file with its WAL and shared memory, or a PostgreSQL connection), the event
#: loop, the log, the interpreter's own.
_RESERVED_FDS: Final = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What `verdryx serve` bounds per connection, and how many it serves at once."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S
    keep_alive_timeout: int = DEFAULT_KEEP_ALIVE_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise UsageError(f"--{name.replace('_', '-')} must be a positive number of seconds")
        if self.keep_alive_timeout < 1:
            raise UsageError("--keep-alive-timeout must be at least 1 second")
        if self.max_connections < 1:
            raise UsageError("--max-connections must be at least 1")
        if self.max_header_bytes < 1024:
            raise UsageError("--max-header-bytes must be at least 1024")


def connection_budget(requested: int) -> tuple[int, str | None]:
    """`requested` connections, or fewer when the process's descriptor limit cannot hold
    them (and a note saying so). Each connection is one descriptor, and two bursts of a
    backlog (half the budget: `http_server.server_config`) may be accepted before the
    connections they evict are closed, so the budget is half of what the limit leaves free."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested, None
    room = max(1, (soft - _RESERVED_FDS) // 2)
    if requested <= room:
        return requested, None
    return room, (
        f"--max-connections {requested} lowered to {room}: the process may open {soft} "
        "descriptors (ulimit -n); raise that limit to serve more at once"
    )
