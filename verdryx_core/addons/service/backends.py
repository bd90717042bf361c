"""Which backend keeps the service tables: the one the store at `--db` uses
(docs/verification-service.md). A PostgreSQL URL gives `PostgresServiceStorage`, anything
else the SQLite file's `SqliteServiceStorage`, as `Store.open` chooses for the store."""

from __future__ import annotations

import os

from verdryx_core.addons.service._sql import SqlServiceStorage
from verdryx_core.addons.service.storage_postgres import PostgresServiceStorage
from verdryx_core.addons.service.storage_sqlite import SqliteServiceStorage
from verdryx_core.store.target import StoreTarget, StoreUrl, parse_store_target

__all__ = ["open_service_storage"]


def open_service_storage(target: StoreTarget | str | os.PathLike[str]) -> SqlServiceStorage:
    """Open the service tables in the verdryx store at `target`, creating what is missing.

    The store itself is opened first, so its guards apply: a file or a schema that is not a
    verdryx store, or one from a newer verdryx, is refused before any table is added."""
    if isinstance(target, str):
        target = parse_store_target(target)  # the store's one parser picks the backend
    if isinstance(target, StoreUrl):
        return PostgresServiceStorage.open(target)
    return SqliteServiceStorage.open(target)
