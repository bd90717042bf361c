"""The run's own temporary folder on the xdist controller, where the target outcomes it calls
are handed to the workers (docs/targets.md, "Under pytest-xdist")."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

__all__ = ["HANDOFF_KEY", "RunFolder", "remove_run_folder", "run_folder"]

#: The entry of verdryx's workerinput naming the file the controller hands target outcomes in.
HANDOFF_KEY = "target_handoff"


class RunFolder:
    """A private temporary folder for this run alone (the controller's), made when a worker
    is first configured and removed when the session ends: what is handed over in it is
    never seen by another run (docs/targets.md, "Under pytest-xdist")."""

    def __init__(self) -> None:
        self._path: Path | None = None

    @property
    def handoff(self) -> Path:
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix="verdryx-run-"))
        return self._path / "targets.sqlite"

    def remove(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


_RUN_FOLDER = pytest.StashKey[RunFolder]()


def run_folder(config: pytest.Config) -> RunFolder:
    folder = config.stash.get(_RUN_FOLDER, None)
    if folder is None:
        folder = config.stash[_RUN_FOLDER] = RunFolder()
    return folder


def remove_run_folder(config: pytest.Config) -> None:
    folder = config.stash.get(_RUN_FOLDER, None)
    if folder is not None:
        folder.remove()
