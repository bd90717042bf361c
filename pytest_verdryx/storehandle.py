"""The session's store, opened on first use and closed once (only the controller writes)."""

from __future__ import annotations

from verdryx_core.store import Store, StoreTarget, resolve_store_path

__all__ = ["StoreHandle"]


class StoreHandle:
    def __init__(self, db: str | None) -> None:
        self.path: StoreTarget = resolve_store_path(db)
        self._store: Store | None = None

    def exists(self) -> bool:
        """Whether the store file exists (looking must not create it)."""
        return self.path.exists()

    def open(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
