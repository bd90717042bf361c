"""Where the store is: a SQLite file path or a PostgreSQL URL, and how to name it safely.

A URL may carry a password; everything that names a store (messages, errors, the terminal
summary, JUnit properties, the report) uses `redact` or a `StoreUrl`, whose `str()` is the
redacted form. See docs/store.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from verdryx_core.untrusted.redact import redact_database_url as redact

__all__ = ["StoreTarget", "StoreUrl", "is_store_url", "redact", "resolve_store_path"]

#: The URL schemes that select the PostgreSQL store (libpq accepts both).
_SCHEMES: Final = ("postgresql://", "postgres://")


def is_store_url(target: object) -> bool:
    """True for a PostgreSQL URL (a `StoreUrl` or a string starting with its scheme)."""
    if isinstance(target, StoreUrl):
        return True
    return isinstance(target, str) and target.strip().lower().startswith(_SCHEMES)


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A PostgreSQL store's URL. `str()` is redacted; only the driver sees `.url`."""

    url: str

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"StoreUrl({str(self)!r})"

    def exists(self) -> bool:
        """A server cannot be checked without connecting; callers that ask before opening
        (is there a baseline to read?) then open it and get a clear error if it is not there."""
        return True

    @property
    def database(self) -> str:
        """The database name, for messages."""
        return urlsplit(self.url).path.lstrip("/")

    def with_query(self, extra: str) -> StoreUrl:
        """The URL with `extra` (key=value) appended to its query string."""
        parts = urlsplit(self.url)
        query = f"{parts.query}&{extra}" if parts.query else extra
        return StoreUrl(urlunsplit(parts._replace(query=query)))


#: What `resolve_store_path` returns and `Store.open` takes.
StoreTarget = Path | StoreUrl


def _target(value: str) -> StoreTarget:
    return StoreUrl(value.strip()) if is_store_url(value) else Path(value)


def resolve_store_path(
    flag: str | None = None, env: Mapping[str, str] | None = None
) -> StoreTarget:
    """The flag, then VERDRYX_DB verbatim, then $TAIPAN_HOME/verdryx.db when that folder
    exists (default ~/.taipan), then ./verdryx.db. Never creates a directory. A PostgreSQL
    URL in the flag or VERDRYX_DB gives a `StoreUrl` (docs/store.md)."""
    env = os.environ if env is None else env
    if flag:
        return _target(flag)
    if env.get("VERDRYX_DB"):
        return _target(env["VERDRYX_DB"])
    home = env.get("TAIPAN_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".taipan"
    )
    if os.path.isdir(home):
        return Path(home) / "verdryx.db"
    return Path("verdryx.db")
