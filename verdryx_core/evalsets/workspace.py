"""A case's `workspace`, checked at load (docs/workspaces-and-execution.md, "Workspaces").

Two spellings: a folder, relative to the eval set file's directory and inside it, or inline
files `{"files": {"relative/path": "content"}}`. Either becomes the one form a case carries
(`EvalCase.workspace`): `{"folder": "/absolute/path", "sha256": ...}` or
`{"files": {...}, "sha256": ...}`, where `sha256` is a hash of the content the agent starts
from (the case's fingerprint reads it, so an edited workspace is a different case).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Final

__all__ = ["file_path_problem", "resolve_workspace", "spelling_problem"]

_DRIVE: Final = re.compile(r"^[A-Za-z]:")

#: Raised by the caller's `fail(field, message)`: an `EvalSetError` naming file and case.
Fail = Callable[[str, str], Exception]


def spelling_problem(path: str, *, base: str) -> str | None:
    """Why `path`, as written, could lead outside `base` (the folder it is relative to, named
    as a message says it): a NUL, a backslash (Windows reads one as a separator, so `..\\x`
    would climb out there), an absolute path, a `..` step. None when its spelling is safe.
    The one rule for paths that agent work is read under: workspaces and contract paths."""
    if "\x00" in path:
        return "contains a NUL character"
    if "\\" in path:
        return f"{path!r} contains a backslash; use '/' as the separator"
    if path.startswith("/") or _DRIVE.match(path):
        return f"{path!r} is absolute; give a path relative to {base}"
    if ".." in PurePosixPath(path).parts:
        return f"{path!r} climbs out with '..'; give a path inside {base}"
    return None


def file_path_problem(path: str) -> str | None:
    """Why `path` cannot name a file inside a workspace, or None."""
    if not path or str(PurePosixPath(path)) == ".":
        return f"{path!r} names the workspace itself; give a file's path relative to it"
    problem = spelling_problem(path, base="the workspace")
    if problem is not None:
        return problem
    if path.endswith("/"):
        return f"{path!r} ends with '/'; name a file, not a folder"
    return None


def resolve_workspace(value: Any, evalset_path: str | Path, fail: Fail) -> dict[str, Any]:
    """The workspace as a case carries it, or `fail("workspace...", why)` raised."""
    if isinstance(value, str):
        return _folder(value, Path(evalset_path), fail)
    files = value["files"]  # the schema allows nothing else in the object
    seen: dict[str, str] = {}
    for name in files:
        problem = file_path_problem(name)
        if problem is not None:
            raise fail(f"workspace.files[{name!r}]", problem)
        normal = str(PurePosixPath(name))
        if normal in seen:
            raise fail(f"workspace.files[{name!r}]", f"names the same file as {seen[normal]!r}")
        seen[normal] = name
    for normal, name in seen.items():
        for parent in PurePosixPath(normal).parents:
            if str(parent) in seen:
                raise fail(
                    f"workspace.files[{name!r}]",
                    f"is inside {seen[str(parent)]!r}, which is a file; a path is a file or a "
                    "folder, not both",
                )
    normalized = {str(PurePosixPath(name)): files[name] for name in files}
    digest = hashlib.sha256()
    for name in sorted(normalized):
        _feed(digest, "file", name, normalized[name].encode("utf-8"))
    return {"files": normalized, "sha256": digest.hexdigest()}


def _folder(value: str, evalset_path: Path, fail: Fail) -> dict[str, Any]:
    problem = _folder_problem(value)
    if problem is not None:
        raise fail("workspace", problem)
    base = Path(os.path.realpath(evalset_path.parent))
    real = Path(os.path.realpath(base / value))
    if real != base and base not in real.parents:
        raise fail(
            "workspace",
            f"{value!r} resolves to {str(real)!r}, outside the eval set's folder {str(base)!r}; "
            "a workspace folder lies beside (or below) its eval set file",
        )
    if not real.is_dir():
        what = "does not exist" if not real.exists() else "is not a folder"
        raise fail("workspace", f"{value!r} {what} (looked for {str(real)!r})")
    return {"folder": str(real), "sha256": _folder_hash(real, value, fail)}


def _folder_problem(value: str) -> str | None:
    if not value.strip():
        return "is empty; give a folder relative to the eval set file"
    if "\\" in value:
        return f"{value!r} contains a backslash; use '/' as the separator"
    if value.startswith("/") or _DRIVE.match(value) or value.startswith("~"):
        return f"{value!r} is absolute; give a folder relative to the eval set file"
    if ".." in PurePosixPath(value).parts:
        return f"{value!r} climbs out with '..'; give a folder beside the eval set file"
    return None


def _folder_hash(root: Path, shown: str, fail: Fail) -> str:
    """sha256 over every entry's relative path, kind and content (a link's target), in path
    order. A link that leads outside the folder would hand the agent a door out: refused."""
    digest = hashlib.sha256()
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(directory)
        for name in sorted([*dirnames, *filenames]):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if real != root and root not in real.parents:
                    raise fail(
                        "workspace",
                        f"{shown!r}: {relative!r} is a symlink to {str(real)!r}, outside the "
                        "workspace folder; copy the file in instead",
                    )
                _feed(digest, "link", relative, os.readlink(path).encode("utf-8"))
            elif path.is_dir():
                _feed(digest, "dir", relative, b"")
            elif path.is_file():
                _feed(digest, "file", relative, path.read_bytes())
            else:
                raise fail(
                    "workspace",
                    f"{shown!r}: {relative!r} is not a file, folder or symlink (a FIFO, a "
                    "socket or a device cannot be copied into a workspace)",
                )
    return digest.hexdigest()


def _feed(digest: Any, kind: str, name: str, data: bytes) -> None:
    # Lengths first: no two different listings feed the same bytes.
    for part in (kind.encode(), name.encode("utf-8"), data):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
