"""The store: runs, scores, baselines and the model response cache.

One interface (`Store`), two backends: a SQLite file (`SqliteStore`, the default) and a
PostgreSQL database (`PostgresStore`, for many CI jobs writing at once). `Store.open(target)`
picks the backend from what `resolve_store_path` returned. Both talk to their database
through the one SQL layer of `verdryx_core.store.db`, which add-ons use for tables of their
own in the store (`Store.db`). See docs/store.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use

if TYPE_CHECKING:
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

#: Public name -> the module that defines it: naming where a store is (`store/target.py`)
#: imports no backend.
_HOMES: Final = {
    "SCHEMA_VERSION": "verdryx_core.store.base",
    "CacheEntry": "verdryx_core.store.base",
    "RunSummary": "verdryx_core.store.base",
    "Store": "verdryx_core.store.base",
    "StoreRowError": "verdryx_core.store.rows",
    "StoreTarget": "verdryx_core.store.target",
    "StoreUrl": "verdryx_core.store.target",
    "describe": "verdryx_core.store.base",
    "is_store_url": "verdryx_core.store.target",
    "parse_store_target": "verdryx_core.store.target",
    "redact": "verdryx_core.store.target",
    "resolve_store_path": "verdryx_core.store.target",
}

__getattr__ = first_use(__name__, _HOMES)


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


def __dir__() -> list[str]:
    return sorted(__all__)
