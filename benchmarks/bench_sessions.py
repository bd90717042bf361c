"""Real pytest sessions run in this process, for the benchmarks that measure the gate through
them (gate_false_red, power_table, sequential, baseline_luck): a project of one eval set
whose target reads each case's metadata, and one quiet session of it."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = ["run_pytest", "write_project_files"]


def write_project_files(
    directory: Path, module: str, agent: str, cases: Sequence[dict[str, Any]]
) -> None:
    """A pytest rootdir holding the target module `module` (its source `agent`) and one eval
    set, `agent`, of `cases`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / f"{module}.py").write_text(agent)
    (directory / "agent.evalset.json").write_text(json.dumps({"id": "agent", "cases": cases}))


def run_pytest(directory: Path, target: str, *args: str) -> int:
    """One quiet pytest session in `directory` against `target` (its store in the folder); its
    exit status. Anything but 0 or 1 (a usage error, an internal error) would make every rate
    meaningless, so it stops the benchmark."""
    out = io.StringIO()
    # Each session puts its rootdir in front of sys.path (the target is imported from there);
    # restored, as pytester does, so a thousand sessions do not leave a thousand entries.
    saved_path = list(sys.path)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = int(
            pytest.main(
                [
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--rootdir={directory}",
                    f"--verdryx-target={target}",
                    f"--verdryx-db={directory / 'store.db'}",
                    *args,
                    str(directory),
                ]
            )
        )
    sys.path[:] = saved_path
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SystemExit(f"session exited {status}, not 0 or 1:\n{out.getvalue()[-3000:]}")
    return status
