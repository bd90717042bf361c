"""Replacing a file so no reader ever sees half of it, and a crash never leaves it empty."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` beside `path`, flush it to disk, rename it into place, then flush the
    folder, so the new name is on disk too.

    Without the first fsync a crash (or a power cut on a CI runner) soon after the rename can
    leave `path` naming an empty or partly written file: the rename reached the disk before
    the data did. Without the folder's, the rename itself may be lost and the old file come
    back. Both are what a committed baseline or a report must never be.

    Not mkstemp: its file is private (0600), while a committed baseline or a shared report gets
    the mode any new file gets under the umask. Mode "x" still never reuses an existing file.
    """
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
