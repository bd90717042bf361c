"""The tests and the graded code, each in a sandbox of its own, started together
(docs/workspaces-and-execution.md, "The harness").

The graded code's side runs the harness server (`harness/server.py`) in a copy of the work
folder, given the listening end of a UNIX socket by file descriptor; the tests' side runs
the tests (pytest, or a case's command) in a copy of its own view of the folder, and reaches
the socket by a path shown to it alone. The tests' side also has its results folder, which
the graded code's side cannot see: what the tests conclude is written where nothing of the
graded code's can reach. One wall clock holds both; when the tests' side ends, the graded
code's is stopped.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from verdryx_core.sandbox.harness.client import ROOTS_ENV, SOCKET_ENV
from verdryx_core.sandbox.isolation import Isolation, Mount, View, sandbox_user
from verdryx_core.sandbox.limits import Limits
from verdryx_core.sandbox.run import Finished, Started, give
from verdryx_core.sandbox.trusted import HARNESS, boot, harness_folder

__all__ = ["Places", "run_paired"]

#: Where the tests' side finds its own folders, isolated.
_TESTS: Final = "/.verdryx/tests"
_OUT: Final = "/.verdryx/out"
_SOCKET: Final = "/.verdryx/socket"


@dataclass(frozen=True, slots=True)
class Places:
    """The paths the tests' side sees: its work folder, its tests folder, its results
    folder (inside the sandbox; the host's own paths when unisolated)."""

    workdir: str
    tests: str
    out: str


def run_paired(
    tests_argv: Callable[[Places], Sequence[str]],
    *,
    workdir: Path,
    tests_view: Path,
    tests_dir: Path,
    out_dir: Path,
    isolation: Isolation,
    limits: Limits,
    env: Mapping[str, str] | None = None,
) -> tuple[Finished, Finished]:
    """Run the graded code's side in a copy of `workdir` and the tests' (`tests_argv` of the
    places it sees) in a copy of `tests_view`, with `tests_dir` read-only and `out_dir`
    writable; both end at the wall clock. What each did: (tests, graded code). OSError when
    a side cannot be started."""
    user = sandbox_user() if isolation.isolated else None
    harness = harness_folder()
    run = Path(tempfile.mkdtemp(prefix="verdryx-pair-"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if user is not None:
            for folder in (workdir, tests_view, tests_dir, out_dir):
                give(folder, user)
        run.chmod(0o755)
        listener.bind(str(run / "s"))
        os.chmod(run / "s", 0o777)
        listener.listen(16)
        if isolation.isolated:
            places = Places(workdir=str(workdir), tests=_TESTS, out=_OUT)
            where, address = HARNESS, f"{_SOCKET}/s"
        else:
            places = Places(workdir=str(tests_view), tests=str(tests_dir), out=str(out_dir))
            where, address = str(harness), str(run / "s")
        shown = (Mount(str(harness), HARNESS),)
        code_side = View(
            staging=workdir, workdir=str(workdir), disk_bytes=limits.disk_bytes, mounts=shown
        )
        tests_side = View(
            staging=tests_view,
            workdir=str(workdir),
            disk_bytes=limits.disk_bytes,
            mounts=(
                *shown,
                Mount(str(tests_dir), _TESTS),
                Mount(str(out_dir), _OUT, writable=True),
                Mount(str(run), _SOCKET),
            ),
        )
        code_workdir = isolation.workdir(code_side)
        server = [
            sys.executable, "-I", "-B", "-c",
            boot(where, "server", f"serve({listener.fileno()}, {code_workdir!r})"),
        ]  # fmt: skip
        tests_env = {
            "PYTHONPATH": where,
            # Nothing of the work folder is on the tests' path but what they put there.
            "PYTHONSAFEPATH": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            SOCKET_ENV: address,
            ROOTS_ENV: os.pathsep.join([places.workdir, places.tests]),
            **(env or {}),
        }
        started = time.perf_counter()
        code = Started(
            server,
            view=code_side,
            isolation=isolation,
            limits=limits,
            user=user,
            env=env,
            pass_fds=(listener.fileno(),),
        )
        # The graded code's side holds the listening socket now: once it is gone, the
        # tests' side is refused at once rather than waiting on a socket nobody serves.
        listener.close()
        try:
            tests = Started(
                tests_argv(places),
                view=tests_side,
                isolation=isolation,
                limits=limits,
                user=user,
                env=tests_env,
            )
        except BaseException:
            code.finish()
            raise
        ended = tests.wait(limits.wall_s - (time.perf_counter() - started))
        graded = code.finish(timed_out=not ended)
        return tests.finish(timed_out=not ended), graded
    finally:
        listener.close()
        shutil.rmtree(run, ignore_errors=True)
