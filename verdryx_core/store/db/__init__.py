"""The one SQL layer: a dialect-neutral connection (`Database`) and its two dialects.

The store (`verdryx_core.store`) and the add-ons that keep tables in it (the verification
service, the contracts add-on's verdict rows) all talk to the database through a `Database`:
`execute`, `executemany`, `rows`, `insert_rows`, `script`, a `transaction()` block, `errors()`
that turns the driver's errors into one StoreError line naming the database without its
password, and `text_in`/`text_out` for free text. `SqliteDb` and `PostgresDb` are the two
dialects; an open store hands out its own as `Store.db` (docs/store.md).
"""

from __future__ import annotations

from verdryx_core.store.db.database import Cursor, Database, error_text, marks
from verdryx_core.store.db.postgres import PostgresDb
from verdryx_core.store.db.sqlite import SqliteDb

__all__ = ["Cursor", "Database", "PostgresDb", "SqliteDb", "error_text", "marks"]
