"""What the `verdryx serve` and `verdryx keys` commands share: the store the service tables
live in."""

from __future__ import annotations

from verdryx_core.addons.service.backends import open_service_storage as _open
from verdryx_core.addons.service.storage import ServiceStorage
from verdryx_core.store import StoreTarget, resolve_store_path

__all__ = ["open_service_storage"]


def open_service_storage(db: str | None) -> tuple[StoreTarget, ServiceStorage]:
    """The service tables in the verdryx store at `--db` (or the default store): a SQLite
    file, or a PostgreSQL URL (its password redacted wherever the target is printed).

    The store is opened first, so a file or schema that is not a verdryx store (or is from a
    newer verdryx) is refused with the store's own message before any table is added to it.
    """
    target = resolve_store_path(db)
    return target, _open(target)
