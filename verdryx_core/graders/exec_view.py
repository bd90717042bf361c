"""The tests' view of the work folder (docs/workspaces-and-execution.md, "The harness"): the
files the agent left, except everything Python or pytest would run or read as configuration,
which is the eval set's own (or absent). So a `conftest.py`, a `pytest.ini`, a plugin, a
`sitecustomize.py`, a planted `__pycache__`, or an edited test file the agent left is never
read on the tests' side: its code runs on the graded code's side only, behind the proxy.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

__all__ = ["build_view", "is_code"]

#: What Python loads as code or pytest reads as its configuration.
_CODE_SUFFIXES: Final = (".py", ".pyc", ".pyo", ".pyw", ".pyi", ".pth", ".so", ".pyd")
_CONFIG: Final = frozenset({"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"})


def is_code(relative: str) -> bool:
    """Whether the work folder's `relative` path is code or test configuration."""
    parts = PurePosixPath(relative).parts
    if "__pycache__" in parts:
        return True
    name = parts[-1] if parts else ""
    return name in _CONFIG or name.endswith(_CODE_SUFFIXES) or ".cpython-" in name


def build_view(workdir: Path, source: Mapping[str, Any] | None, view: Path) -> None:
    """Fill `view` (an empty folder) with the tests' view of `workdir`, the eval set's code
    taken from `source` (the case's workspace as it loaded, or None)."""
    _agent_files(workdir, view, PurePosixPath())
    if source is None:
        return
    if source.get("folder") is not None:
        root = Path(source["folder"])
        for folder, _, files in os.walk(root):
            here = Path(folder)
            for name in files:
                relative = (here / name).relative_to(root).as_posix()
                if is_code(relative) and not (here / name).is_symlink():
                    shutil.copyfile(here / name, _place(view, relative))
    else:
        for relative, text in source.get("files", {}).items():
            if is_code(relative):
                _place(view, relative).write_text(text, encoding="utf-8")


def _place(view: Path, relative: str) -> Path:
    """Where `relative` goes in `view`, its folders made real ones: a link the agent left on
    the way is removed, never followed (it could lead anywhere on the host)."""
    here = view
    for part in PurePosixPath(relative).parent.parts:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            here.unlink()
        here.mkdir(exist_ok=True)
    return here / PurePosixPath(relative).name


def _agent_files(folder: Path, view: Path, relative: PurePosixPath) -> None:
    """The agent's files under `folder` but code and configuration: a link as a link, a
    file as a hard link to it (no bytes copied) or else a copy; a FIFO or a socket it left
    is nothing the tests can read."""
    (view / relative).mkdir(exist_ok=True)
    with os.scandir(folder) as entries:
        for entry in entries:
            path = relative / entry.name
            if is_code(path.as_posix()):
                continue
            target = view / path
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir(follow_symlinks=False):
                _agent_files(Path(entry.path), view, path)
            elif entry.is_file(follow_symlinks=False):
                try:
                    os.link(entry.path, target)
                except OSError:
                    shutil.copyfile(entry.path, target)
