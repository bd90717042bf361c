"""Files named by a flag, an ini key or another file, read only when they are regular files.

A name may lead anywhere: to a FIFO (reading it waits for a writer forever, and so does
opening it), to a device (`/dev/zero` and `/dev/urandom` never end), to a socket or to a
folder. Every such file verdryx reads or appends to (eval sets, labels files, baseline files,
price files, the event log) is opened here, by one rule: without blocking, then checked once
open, so a FIFO put in its place after any earlier look is refused too, never waited on
(docs/troubleshooting.md, "Reliability").

`NotARegularFile` is an `OSError` whose text says what the file is (`it is a FIFO, not a
regular file`), so a reader that already words `OSError`s ("cannot read: ...") words it too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "NotARegularFile",
    "file_kind",
    "open_regular",
    "path_kind",
    "read_regular_bytes",
    "read_regular_text",
]

_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotARegularFile(OSError):
    """`path` is not a regular file; `kind` is what it is (`a FIFO`, `a character device`)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", str(path))
        self.kind = kind

    def __str__(self) -> str:
        return str(self.strerror)


def file_kind(mode: int) -> str | None:
    """What a file of `mode` (an `st_mode`) is when it is not a regular file; None when it is."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """`file_kind` of what `path` leads to (symbolic links followed); None for a regular file.
    Raises `FileNotFoundError` (or another `OSError`) when there is nothing to look at."""
    return file_kind(os.stat(path).st_mode)


def _kind_or_none(path: str | os.PathLike[str]) -> str | None:
    try:
        return path_kind(path)
    except OSError:
        return None


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor on `path`, which must be a regular file: opened with `O_NONBLOCK` (so a
    FIFO cannot hold the open) and checked once open; `NotARegularFile` otherwise. On a
    regular file `O_NONBLOCK` changes nothing."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, mode)
    except OSError as exc:
        # ENXIO: a FIFO opened to write with no reader, or a socket; say which.
        if exc.errno == errno.ENXIO:
            kind = _kind_or_none(path)
            if kind is not None:
                raise NotARegularFile(path, kind) from None
        raise
    try:
        kind = file_kind(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if kind is not None:
        os.close(fd)
        raise NotARegularFile(path, kind)
    return fd


def read_regular_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole of the regular file `path` (`NotARegularFile` for anything else)."""
    with open(open_regular(path), "rb") as handle:
        return handle.read()


def read_regular_text(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> str:
    """The regular file `path` as text, read as `Path.read_text` reads it (universal
    newlines); `NotARegularFile` for anything else, `UnicodeDecodeError` for bad text."""
    with open(open_regular(Path(path)), encoding=encoding) as handle:
        return handle.read()
