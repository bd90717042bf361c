"""The session's store, opened on first use and closed once (only the controller writes)."""

from __future__ import annotations

import os
from pathlib import Path

from verdryx_core.store import Store, StoreTarget, resolve_store_path

__all__ = ["StoreHandle", "session_store_path"]


def session_store_path(
    flag: str | None, ini: str | None, *, rootdir: Path, inidir: Path | None
) -> StoreTarget:
    """Where a session's store is (docs/options.md): a relative `--verdryx-db` and the default
    `verdryx.db` live in the rootdir, a relative ini value beside the ini file; never in
    whatever folder pytest was started from. $VERDRYX_DB is taken verbatim, as the CLI does."""
    if flag:
        target, base = resolve_store_path(flag), rootdir
    elif ini:
        target, base = resolve_store_path(ini), inidir or rootdir
    else:
        if os.environ.get("VERDRYX_DB"):
            return resolve_store_path(None)
        target, base = resolve_store_path(None), rootdir
    if isinstance(target, Path) and not target.is_absolute():
        return base / target
    return target


class StoreHandle:
    def __init__(self, db: str | StoreTarget | None) -> None:
        self.path: StoreTarget = resolve_store_path(db) if db is None or isinstance(db, str) else db
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
