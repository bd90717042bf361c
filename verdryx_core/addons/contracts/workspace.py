"""What checks observe, and the live workspace that answers them while recording evidence.

Checks never touch the filesystem themselves: they ask a `Source` four questions (what is at
this path, its bytes, its directory entries, a SQLite table's row count). The workspace
answers from the real files under the base path and records every answer as a bundle
artifact; `evidence.BundleSource` answers the same questions from a bundle alone. One set of
checks, two sources: a bundle is re-checked by exactly the code that checked the world.
"""

from __future__ import annotations

import base64
import heapq
import os
import re
import sqlite3
import stat
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from verdryx_core.addons.contracts.model import Limits
from verdryx_core.addons.contracts.paths import normalize, resolve_under
from verdryx_core.addons.errors import CheckError
from verdryx_core.errors import UsageError

__all__ = [
    "SQLITE_HEADER",
    "Listing",
    "PathInfo",
    "Source",
    "TableFacts",
    "WorkspaceSource",
    "base_directory",
    "is_plain_identifier",
]

#: The first 16 bytes of every SQLite 3 database file (an empty file is an empty database).
SQLITE_HEADER: Final = b"SQLite format 3\x00"

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# O_NOFOLLOW: the resolved path holds no symlink, so one appearing now is a race: refuse it.
# O_NONBLOCK: opening a FIFO must not hang the check (it then fails the regular-file test).
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def is_plain_identifier(name: str) -> bool:
    return _IDENTIFIER.fullmatch(name) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class PathInfo:
    """What is at a path: `file` (with size), `dir`, `missing`, or `other` (with a note)."""

    kind: str
    size: int | None = None
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """A directory's entry names, sorted, directories ending in '/'; `count` is the total."""

    entries: tuple[str, ...]
    count: int
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFacts:
    """A table in a SQLite file: its row count, or that it is absent, or that the file is not
    a SQLite database at all (the last two are answers, so the check fails, not errors)."""

    rows: int | None = None
    absent: bool = False
    not_sqlite: str | None = None


class Source(Protocol):
    """Answers a check's questions; raises `CheckError` when a question cannot be answered."""

    limits: Limits

    def stat(self, path: str) -> PathInfo: ...

    def read(self, path: str) -> bytes: ...

    def listdir(self, path: str) -> Listing: ...

    def sqlite_table(self, path: str, table: str) -> TableFacts: ...


def base_directory(base_path: str | os.PathLike[str]) -> Path:
    """The base path as a real absolute directory, or a `UsageError` saying what is wrong."""
    real = Path(os.path.realpath(base_path))
    if not real.is_dir():
        what = "does not exist" if not real.exists() else "is not a directory"
        raise UsageError(
            f"base path {os.fspath(base_path)!r} {what}; give the directory the agent worked in"
        )
    return real


class WorkspaceSource:
    """The real files under a base path; every answer is also kept as a bundle artifact."""

    def __init__(self, base_path: str | os.PathLike[str], limits: Limits | None = None) -> None:
        self.base = base_directory(base_path)
        self.limits = limits or Limits()
        #: normalized path -> artifact (bundle shape, before hashes are sealed in).
        self.artifacts: dict[str, dict[str, Any]] = {}
        # One observation per path: several checks on one file see the same bytes, and the
        # bundle records exactly those, even if the file changes while the checks run.
        self._stats: dict[str, PathInfo | CheckError] = {}
        self._reads: dict[str, bytes | CheckError] = {}

    def _artifact(self, relative: str) -> dict[str, Any]:
        return self.artifacts.setdefault(relative, {"path": relative})

    # -- stat -------------------------------------------------------------------------------

    def stat(self, path: str) -> PathInfo:
        relative = normalize(path)
        known = self._stats.get(relative)
        if isinstance(known, CheckError):
            raise known
        if known is not None:
            return known
        artifact = self._artifact(relative)
        try:
            info = self._stat(relative)
        except CheckError as exc:
            self._stats[relative] = exc
            artifact.update(kind="error", error=str(exc))
            raise
        self._stats[relative] = info
        artifact["kind"] = info.kind
        if info.size is not None:
            artifact["size"] = info.size
        if info.note:
            artifact["note"] = info.note
        return info

    def _stat(self, relative: str) -> PathInfo:
        real = resolve_under(self.base, relative)
        try:
            status = os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.lexists(self.base / relative):
                return PathInfo(kind="other", note="a dangling symlink")
            return PathInfo(kind="missing")
        except OSError as exc:
            raise CheckError(f"cannot inspect {relative!r}: {exc.strerror or exc}") from None
        if stat.S_ISREG(status.st_mode):
            return PathInfo(kind="file", size=status.st_size)
        if stat.S_ISDIR(status.st_mode):
            return PathInfo(kind="dir")
        return PathInfo(kind="other", note=_file_type(status.st_mode))

    # -- read -------------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        relative = normalize(path)
        known = self._reads.get(relative)
        if isinstance(known, CheckError):
            raise known
        if known is not None:
            return known
        artifact = self._artifact(relative)
        try:
            data = self._read(relative)
        except CheckError as exc:
            self._reads[relative] = exc
            artifact["content"] = {"error": str(exc)}
            raise
        self._reads[relative] = data
        cap = self.limits.max_file_bytes
        captured = data[:cap]
        try:
            encoded = {"encoding": "utf-8", "data": captured.decode("utf-8")}
        except UnicodeDecodeError:
            # JSON carries text only; bytes that are not UTF-8 travel as base64.
            encoded = {"encoding": "base64", "data": base64.b64encode(captured).decode("ascii")}
        artifact["content"] = {
            **encoded,
            "bytes": len(captured),
            "size": len(data),
            "truncated": len(data) > cap,
        }
        return data

    def _read(self, relative: str) -> bytes:
        real = resolve_under(self.base, relative)
        limit = self.limits.max_read_bytes
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            raise CheckError(f"cannot open {relative!r}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                raise CheckError(f"{relative!r} is {_file_type(status.st_mode)}, not a file")
            if status.st_size > limit:
                raise CheckError(
                    f"{relative!r} has {status.st_size} bytes, more than the {limit} a check "
                    "reads; check a smaller file or raise Limits.max_read_bytes"
                )
            try:
                data = handle.read(limit + 1)
            except OSError as exc:
                raise CheckError(f"cannot read {relative!r}: {exc.strerror or exc}") from None
        if len(data) > limit:  # it grew while we read it
            raise CheckError(f"{relative!r} grew past {limit} bytes while it was read")
        return data

    # -- listdir ----------------------------------------------------------------------------

    def listdir(self, path: str) -> Listing:
        relative = normalize(path)
        artifact = self._artifact(relative)
        try:
            listing = self._listdir(relative)
        except CheckError as exc:
            artifact["listing"] = {"error": str(exc)}
            raise
        artifact["listing"] = {
            "entries": list(listing.entries),
            "count": listing.count,
            "truncated": listing.truncated,
        }
        return listing

    def _listdir(self, relative: str) -> Listing:
        real = resolve_under(self.base, relative)
        count = 0

        def names() -> Any:
            nonlocal count
            with os.scandir(real) as entries:
                for entry in entries:
                    count += 1
                    yield entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "")

        cap = self.limits.max_dir_entries
        try:
            # The smallest `cap` names in one pass: memory stays bounded for huge directories.
            kept = heapq.nsmallest(cap, names())
        except OSError as exc:
            raise CheckError(f"cannot list {relative!r}: {exc.strerror or exc}") from None
        return Listing(entries=tuple(kept), count=count, truncated=count > cap)

    # -- sqlite -----------------------------------------------------------------------------

    def sqlite_table(self, path: str, table: str) -> TableFacts:
        relative = normalize(path)
        tables = self._artifact(relative).setdefault("sqlite", {"tables": {}})["tables"]
        try:
            facts = self._sqlite_table(relative, table)
        except CheckError as exc:
            tables[table] = {"error": str(exc)}
            raise
        if facts.not_sqlite is not None:
            tables[table] = {"not_sqlite": facts.not_sqlite}
        elif facts.absent:
            tables[table] = {"absent": True}
        else:
            tables[table] = {"rows": facts.rows}
        return facts

    def _sqlite_table(self, relative: str, table: str) -> TableFacts:
        if not is_plain_identifier(table):
            # Validation already refused it; this guard keeps the SQL below safe on its own.
            raise CheckError(f"table name {table!r} is not a plain SQL identifier")
        real = resolve_under(self.base, relative)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            raise CheckError(f"cannot open {relative!r}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if header and header != SQLITE_HEADER:
            return TableFacts(not_sqlite="the file does not start with the SQLite 3 header")
        # mode=ro: a check never writes, never creates a file, never rolls back a journal.
        uri = f"file:{urllib.parse.quote(str(real))}?mode=ro"
        try:
            connection = sqlite3.connect(
                uri, uri=True, timeout=self.limits.sqlite_timeout_s, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise CheckError(f"cannot open {relative!r} read-only: SQLite says: {exc}") from None
        try:
            # A bound parameter, never formatted text: the name is data until it is proven.
            row = connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                (table,),
            ).fetchone()
            if row is None:
                return TableFacts(absent=True)
            stored = row[0]
            if not is_plain_identifier(stored):
                raise CheckError(f"table {stored!r} in {relative!r} has an unusual name")
            # Safe to quote: a plain identifier, and the name SQLite itself reported.
            (rows,) = connection.execute(f'SELECT COUNT(*) FROM "{stored}"').fetchone()
            return TableFacts(rows=int(rows))
        except sqlite3.DatabaseError as exc:
            if "file is not a database" in str(exc):
                return TableFacts(not_sqlite=f"SQLite says: {exc}")
            raise CheckError(
                f"cannot read table {table!r} in {relative!r}: SQLite says: {exc}"
            ) from None
        finally:
            connection.close()


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"
