"""The store: runs, scores, baselines and the model response cache.

One interface (`Store`), two backends: a SQLite file (`SqliteStore`, the default) and a
PostgreSQL database (`PostgresStore`, for many CI jobs writing at once). `Store.open(target)`
picks the backend from what `resolve_store_path` returned. Both talk to their database
through the one SQL layer of `verdryx_core.store.db`, which add-ons use for tables of their
own in the store (`Store.db`). See docs/store.md.
"""

from __future__ import annotations

from verdryx_core.store import postgres as _postgres  # noqa: F401  (registers the backend)
from verdryx_core.store import sqlite as _sqlite  # noqa: F401  (registers the backend)
from verdryx_core.store.base import SCHEMA_VERSION, CacheEntry, RunSummary, Store, describe
from verdryx_core.store.rows import StoreRowError
from verdryx_core.store.target import (
    StoreTarget,
    StoreUrl,
    is_store_url,
    parse_store_target,
    redact,
    resolve_store_path,
)

__all__ = [
    "SCHEMA_VERSION",
    "CacheEntry",
    "RunSummary",
    "Store",
    "StoreRowError",
    "StoreTarget",
    "StoreUrl",
    "describe",
    "is_store_url",
    "parse_store_target",
    "redact",
    "resolve_store_path",
]
