"""Every contract path is resolved under the base path, and never leads outside it.

Two layers: a lexical rule checked when a contract is loaded (no '..', no absolute path, no
backslash), and a resolution rule checked on the real filesystem (a symlink, anywhere on the
way, that leads outside the base path is an error). Neither ever reads outside.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from verdryx_core.addons.errors import CheckError
from verdryx_core.evalsets.workspace import spelling_problem

__all__ = ["lexical_problem", "normalize", "resolve_under"]


def lexical_problem(path: str) -> str | None:
    """Why `path` can never be a contract path, or None when its spelling is acceptable (the
    rule workspaces follow too: `verdryx_core.evalsets.workspace.spelling_problem`)."""
    if not path:
        return "is empty; give a path relative to the base path"
    return spelling_problem(path, base="the base path")


def normalize(path: str) -> str:
    """The one spelling of a valid path ('./a//b' -> 'a/b'; the base itself is '.')."""
    problem = lexical_problem(path)
    if problem is not None:
        raise CheckError(f"path {problem}")
    return str(PurePosixPath(path))


def resolve_under(base: Path, path: str) -> Path:
    """The real location of `path` under `base` (already a real, absolute directory).

    Symlinks are followed as the OS would follow them; if the result is not inside `base`
    the answer is a `CheckError`, so no caller ever opens a file outside the base path.
    """
    relative = normalize(path)
    candidate = base / relative
    # realpath (non-strict) resolves every existing component, so a link anywhere counts.
    real = Path(os.path.realpath(candidate))
    if real != base and base not in real.parents:
        raise CheckError(
            f"path {relative!r} resolves to {str(real)!r}, outside the base path "
            f"{str(base)!r} (a symlink escapes it); verdryx never reads outside the base path"
        )
    return real
