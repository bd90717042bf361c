"""Target answers handed from the one process that called the target to the processes that
grade them, for ONE run (docs/targets.md, "Under pytest-xdist").

Not a cache: the file lives in a temporary folder named for nothing else, is written once by
the caller before any grader reads it, and is removed when the run ends; nothing in it is
ever read by a later run, and a target's cache setting (`--verdryx-cache`, the declared
version) is untouched by it. Errors are handed too (an exception, a timeout, a bad result):
the grading process then reports the same item error it would have raised calling itself.

A reader that finds no file, or no row for a key, gets None: its process calls the target.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.runner import TargetCall

__all__ = ["TargetHandoff", "handoff_key"]

_SCHEMA: Final = "CREATE TABLE answer (key TEXT PRIMARY KEY, data TEXT NOT NULL)"


def handoff_key(spec: str, case: TargetCase, variant: Mapping[str, Any] | None = None) -> str:
    """The same call in every process of the run: the target's name, the case object it is
    given (repeat included) and what else its result depends on (a dialogue's user)."""
    material: dict[str, Any] = {"target": spec, "case": case.to_dict()}
    if variant is not None:
        material["variant"] = dict(variant)
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TargetHandoff:
    """One run's answers in a SQLite file at `path`. The caller `put`s answers as calls end
    and `write`s them once; readers `get` by key. Thread-safe."""

    def __init__(self, path: str | os.PathLike[str], *, writing: bool) -> None:
        self.path = Path(path)
        self.writing = writing
        self._lock = threading.Lock()
        self._pending: dict[str, str] = {}
        self._connection: sqlite3.Connection | None = None
        self._absent = False
        #: Answers handed to this process (a reader's figure).
        self.handed = 0

    def put(self, key: str, answer: TargetCall) -> None:
        if not self.writing:
            return
        data = json.dumps(answer.to_dict(), separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            self._pending[key] = data

    def write(self) -> int:
        """Everything `put` so far, in one file, whole: written beside and renamed into place,
        so a reader never opens half of it. Returns how many answers."""
        with self._lock:
            rows, self._pending = list(self._pending.items()), {}
        if not rows:
            return 0
        partial = self.path.with_name(self.path.name + ".partial")
        partial.unlink(missing_ok=True)
        connection = sqlite3.connect(partial)
        try:
            with connection:
                connection.execute(_SCHEMA)
                connection.executemany("INSERT OR REPLACE INTO answer VALUES (?, ?)", rows)
        finally:
            connection.close()
        os.replace(partial, self.path)
        return len(rows)

    def get(self, key: str) -> TargetCall | None:
        """The answer handed for `key`, or None (the caller then calls the target itself)."""
        if self.writing:
            return None
        with self._lock:
            connection = self._open()
            if connection is None:
                return None
            row = connection.execute("SELECT data FROM answer WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            self.handed += 1
        return TargetCall.from_dict(json.loads(row[0]))

    def _open(self) -> sqlite3.Connection | None:
        if self._connection is None and not self._absent:
            if not self.path.is_file():
                # Nothing was prefetched: decided once, before this process's first item.
                self._absent = True
                return None
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            self._connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        return self._connection

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
