"""Fresh workspaces: one temporary folder per case and sample, made before the agent is called
and removed once the sample is graded (docs/workspaces-and-execution.md, "Workspaces").

Every workspace of a run lies under one root folder of the system's temporary directory, so
whatever a sample could not remove itself (a Ctrl-C that abandoned a call in flight, a
target still writing after its timeout) goes when the run ends (`Workspaces.close`). With
`keep`, nothing is removed and the scores name the folders they were graded in.

A sample's folder holds `workspace/` (what the agent is given) and `evidence/` (what graders
collected there, such as contract evidence bundles), side by side: a grader's files never
change the workspace the next grader reads.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from verdryx_core.evalsets.workspace import link_problem

__all__ = ["Sample", "Workspaces", "copy_folder"]

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def _part(text: str) -> str:
    """A readable, safe piece of a folder name (ids may hold any printable character)."""
    return _UNSAFE.sub("_", text)[:40] or "_"


class Sample:
    """One sample's folder: `workspace` (the agent's) and `evidence` (the graders')."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.workspace = folder / "workspace"
        self.evidence = folder / "evidence"


class Workspaces:
    """Thread-safe: the pool's threads make and release samples concurrently."""

    def __init__(self, *, keep: bool = False) -> None:
        self.keep = keep
        self._root: Path | None = None
        self._aborted = False
        self._lock = threading.Lock()

    @property
    def root(self) -> Path | None:
        """The folder every workspace of the run lies under (None until the first is made)."""
        return self._root

    def make(self, workspace: Mapping[str, Any], *, name: str, repeat: int) -> Sample:
        """A fresh copy of `workspace` (as `EvalCase.workspace` holds it)."""
        with self._lock:
            if self._aborted:
                # A thread a Ctrl-C abandoned must not start a new folder nobody removes.
                raise RuntimeError("the run was interrupted: no new workspace is made")
            if self._root is None or not self._root.is_dir():
                self._root = Path(tempfile.mkdtemp(prefix="verdryx-workspaces-"))
            root = self._root
        sample = Sample(Path(tempfile.mkdtemp(prefix=f"{_part(name)}-r{repeat}-", dir=root)))
        try:
            folder = workspace.get("folder")
            if folder is not None:
                copy_folder(Path(folder), sample.workspace)
            else:
                sample.workspace.mkdir()
                for relative, text in workspace["files"].items():
                    path = sample.workspace / relative
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
            sample.evidence.mkdir()
        except BaseException:
            self.release(sample, force=True)
            raise
        return sample

    def release(self, sample: Sample, *, force: bool = False) -> None:
        """The sample is graded: remove its folder (unless kept)."""
        if force or not self.keep:
            shutil.rmtree(sample.folder, ignore_errors=True)

    def abort(self) -> None:
        """Ctrl-C: no new workspace from now on, and every one made so far goes (unless
        kept), under the feet of calls still in flight, which are given up on anyway."""
        with self._lock:
            self._aborted = True
        self.close()

    def close(self) -> None:
        """The run is over: remove the root with whatever is left in it (unless kept)."""
        with self._lock:
            root, self._root = self._root, None
        if root is not None and not self.keep:
            shutil.rmtree(root, ignore_errors=True)


def copy_folder(source: Path, copy: Path) -> None:
    """`source` copied to `copy` (which must not exist): every file a new file with the same
    bytes, never a link to the source's. A link is copied as a link only when it is relative
    and stays inside the folder (the load checked it; checked again here, since the folder
    may have changed since), so in the copy it leads to the copy's file; any other is an
    OSError naming it, the case's error."""
    root = Path(os.path.realpath(source))

    def copy_entry(src: str, dst: str, *, follow_symlinks: bool = True) -> object:
        del follow_symlinks  # links never reach here: `copytree(symlinks=True)` handles them
        return shutil.copy2(src, dst, follow_symlinks=False)

    def checked_links(folder: str, names: list[str]) -> list[str]:
        for name in names:
            path = Path(folder) / name
            if path.is_symlink():
                problem = link_problem(path, root)
                if problem is not None:
                    shown = path.relative_to(root).as_posix()
                    raise OSError(f"the workspace's {shown!r} {problem}")
        return []

    shutil.copytree(root, copy, symlinks=True, ignore=checked_links, copy_function=copy_entry)
