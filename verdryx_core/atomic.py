"""Replacing a file so no reader ever sees half of it, and a crash never leaves it empty;
and never replacing what is not a regular file (docs/options.md, "Files verdryx writes").

A rename over a path that names a device, a FIFO or a socket replaces the node itself: aimed
at `/dev/null` (a common "discard this" in CI, where jobs often run as root) it would leave a
regular file there for the whole machine. Such a path is written in place instead (a
character device, a FIFO with a reader), or refused with one line (a FIFO nobody reads, which
would hang the session; a socket or a block device, which no report is meant for).
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

from verdryx_core.errors import UsageError

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` beside `path`, flush it to disk, rename it into place, then flush the
    folder, so the new name is on disk too. A `path` that exists and is a character device
    or a FIFO is written in place (`_write_in_place`), never renamed over.

    Without the first fsync a crash (or a power cut on a CI runner) soon after the rename can
    leave `path` naming an empty or partly written file: the rename reached the disk before
    the data did. Without the folder's, the rename itself may be lost and the old file come
    back. Both are what a committed baseline or a report must never be.

    Not mkstemp: its file is private (0600), while a committed baseline or a shared report gets
    the mode any new file gets under the umask. Mode "x" still never reuses an existing file.
    """
    mode = _existing_mode(path)
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        _write_in_place(path, text, mode)
        return path
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return path


def _existing_mode(path: Path) -> int | None:
    """The mode of what `path` names, links followed (a link to /dev/null is the device);
    None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _write_in_place(path: Path, text: str, mode: int) -> None:
    """`text` written into the device or FIFO at `path`, which stays what it is. A FIFO is
    opened without blocking: with no reader that fails at once (ENXIO), and is refused,
    where a blocking open would wait for a reader forever."""
    what = _kind(mode)
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise UsageError(
            f"cannot write {str(path)!r}: it is {what}, and verdryx writes only regular "
            "files, character devices (such as /dev/null) and FIFOs; choose another path"
        )
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UsageError(
                f"cannot write {str(path)!r}: it is a FIFO with no reader, and writing to it "
                "would wait forever; start its reader first, or choose another path"
            ) from None
        raise UsageError(f"cannot write {str(path)!r} ({what}): {exc.strerror or exc}") from None
    try:
        opened = os.fstat(descriptor).st_mode
        if stat.S_IFMT(opened) != stat.S_IFMT(mode):
            # Replaced between the look and the open: write nothing into what is there now.
            raise UsageError(f"cannot write {str(path)!r}: it changed while it was opened")
        # Blocking again once open: a reader that is slower than the writer is waited for.
        os.set_blocking(descriptor, True)
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    except OSError as exc:
        raise UsageError(f"cannot write {str(path)!r} ({what}): {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename). Windows cannot open a folder for this, and
    some filesystems refuse it; the file is already whole on disk by then, so only the
    rename's durability is at stake there."""
    if os.name == "nt":
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # e.g. EINVAL on a filesystem without folder sync
    finally:
        os.close(descriptor)
