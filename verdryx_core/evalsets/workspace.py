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
import posixpath
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Final

from verdryx_core.untrusted.text import first_hidden_character

__all__ = ["file_path_problem", "link_problem", "resolve_workspace", "spelling_problem"]

_DRIVE: Final = re.compile(r"^[A-Za-z]:")
#: A file name's bytes (Linux's NAME_MAX), and a whole path's: a longer name cannot be made
#: on most file systems, and would fail when the workspace is copied, not when it loads.
MAX_NAME_BYTES: Final = 255
MAX_PATH_BYTES: Final = 1024
#: How much of a refused name an error line shows.
_SHOWN: Final = 80

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
    """Why `path` cannot name a file inside a workspace, or None. Beyond the spelling rule,
    a name follows the ids' rules (docs/workspaces-and-execution.md, "Workspaces"): no
    control, format or separator character (a line break, a bidi override, a zero-width
    character, a space other than U+0020 hide what a listing shows) and a bounded length."""
    if not path or str(PurePosixPath(path)) == ".":
        return f"{_shown(path)} names the workspace itself; give a file's path relative to it"
    hidden = _hidden_character(path)
    if hidden is not None:
        return (
            f"{_shown(path)} holds the character '{hidden}', which would hide what the name "
            "says wherever it is listed; remove it"
        )
    problem = spelling_problem(path, base="the workspace")
    if problem is not None:
        return problem
    if path.endswith("/"):
        return f"{path!r} ends with '/'; name a file, not a folder"
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return f"{_shown(path)} is longer than {MAX_PATH_BYTES} bytes; give a shorter path"
    for part in PurePosixPath(path).parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            return (
                f"{_shown(path)} has a name longer than {MAX_NAME_BYTES} bytes "
                f"({_shown(part)}); no file system would hold it"
            )
    return None


def _hidden_character(text: str) -> str | None:
    found = first_hidden_character(text)
    if found is not None:
        return found
    for char in text:
        if char != " " and unicodedata.category(char) == "Zs":
            return f"\\u{ord(char):04x}"
    return None


def _shown(text: str) -> str:
    """`text` as an error line names it: its repr (escaping what it hides), cut."""
    shown = repr(text)
    return shown if len(shown) <= _SHOWN else f"{shown[: _SHOWN - 4]}...{shown[-1]}"


def link_problem(link: Path, root: Path) -> str | None:
    """Why the symlink `link` (inside the folder `root`, both real paths but the link's own
    name) may not be copied into a workspace, or None. Only a relative link that stays
    inside the folder, as written and once resolved, is copied as a link: in the copy it
    then leads to the copy's file. An absolute link, even one into the folder, would lead
    the agent's writes back to the source."""
    target = os.readlink(link)
    if os.path.isabs(target):
        return f"is a symlink to the absolute path {target!r}; make it relative, inside the folder"
    written = posixpath.normpath(posixpath.join(link.parent.relative_to(root).as_posix(), target))
    real = Path(os.path.realpath(link))
    if written == ".." or written.startswith("../") or (real != root and root not in real.parents):
        return (
            f"is a symlink to {target!r} ({str(real)!r}), outside the workspace folder; copy "
            "the file in instead"
        )
    return None


def resolve_workspace(value: Any, evalset_path: str | Path, fail: Fail) -> dict[str, Any]:
    """The workspace as a case carries it, or `fail("workspace...", why)` raised."""
    if isinstance(value, str):
        return _folder(value, Path(evalset_path), fail)
    files = value["files"]  # the schema allows nothing else in the object
    seen: dict[str, str] = {}
    # By NFC form: two spellings of one name (an é precomposed, or e + U+0301) look the same
    # in every listing and are one file or two depending on the file system.
    twins: dict[str, str] = {}
    for name in files:
        field = f"workspace.files[{_shown(name)}]"
        problem = file_path_problem(name)
        if problem is not None:
            raise fail(field, problem)
        normal = str(PurePosixPath(name))
        if normal in seen:
            raise fail(field, f"names the same file as {seen[normal]!r}")
        twin = unicodedata.normalize("NFC", normal)
        if twin in twins:
            raise fail(
                field,
                f"names the same file as {twins[twin]!r} in another Unicode normalization form "
                "(NFC/NFD): the two look identical in every listing; write both the same way",
            )
        seen[normal] = twins[twin] = name
    for normal, name in seen.items():
        for parent in PurePosixPath(normal).parents:
            if str(parent) in seen:
                raise fail(
                    f"workspace.files[{_shown(name)}]",
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
    order. A link that leads outside the folder (or is absolute) would hand the agent a door
    out, or lead its writes back to the source: refused (`link_problem`)."""
    digest = hashlib.sha256()
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(directory)
        for name in sorted([*dirnames, *filenames]):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                problem = link_problem(path, root)
                if problem is not None:
                    raise fail("workspace", f"{shown!r}: {relative!r} {problem}")
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
