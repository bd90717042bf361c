"""Replacing a file so no reader ever sees half of it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` beside `path`, then rename it into place.

    Not mkstemp: its file is private (0600), while a committed baseline or a shared report gets
    the mode any new file gets under the umask. Mode "x" still never reuses an existing file.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
