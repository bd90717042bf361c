"""What `verdryx serve` and `verdryx keys` share: the store file the service tables live in."""

from __future__ import annotations

from pathlib import Path

from verdryx_core.errors import UsageError
from verdryx_core.service.storage import SqliteServiceStorage
from verdryx_core.store import Store, resolve_store_path

__all__ = ["open_service_storage"]


def open_service_storage(db: str | None) -> tuple[Path, SqliteServiceStorage]:
    """The service tables in the verdryx store at `--db` (or the default store).

    The store is opened first, so a file that is not a verdryx store (or is from a newer
    verdryx) is refused with the store's own message before any table is added to it.
    """
    path = resolve_store_path(db)
    if not isinstance(path, Path):
        raise UsageError(
            f"{path}: the verification service keeps its tables in a SQLite store file; "
            "a PostgreSQL store is not supported for it yet",
            hint="pass a file path with {db}",
        )
    Store.open(path).close()
    return path, SqliteServiceStorage.open(path)
