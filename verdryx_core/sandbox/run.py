"""One sandboxed run: a command in a folder, isolated (`Isolation`), limited (`Limits`),
killed with everything it started at the wall-clock limit, its output capped.

The child's environment is built from nothing: a private home and temporary folder, PATH,
a UTF-8 locale; nothing of verdryx's own environment (API keys) reaches it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from verdryx_core.sandbox.isolation import Isolation, sandbox_user
from verdryx_core.sandbox.limits import Limits

__all__ = ["Finished", "run_sandboxed"]

_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """How a run ended: its exit code (negative: the signal that killed it), whether the
    wall clock ran out, its output (capped) and its wall time."""

    exit_code: int
    timed_out: bool
    output: str
    seconds: float

    @property
    def signal_name(self) -> str | None:
        if self.exit_code >= 0:
            return None
        try:
            return signal.Signals(-self.exit_code).name
        except ValueError:
            return f"signal {-self.exit_code}"


def run_sandboxed(
    argv: Sequence[str],
    *,
    workdir: Path,
    isolation: Isolation,
    limits: Limits,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run `argv` in `workdir` (its only writable folder, with a private home). Never raises
    for what the code does; OSError when the command cannot be started at all."""
    # Without namespaces there is no way to show a hidden runtime to another user: the
    # unsafe run is verdryx's own user's.
    user = sandbox_user() if isolation.isolated else None
    scratch = Path(tempfile.mkdtemp(prefix="verdryx-exec-"))
    try:
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir()
        tmp.mkdir()
        if user is not None:
            for folder in (workdir, scratch):
                _give(folder, user)
        child_env = {
            "PATH": os.environ.get("PATH", _DEFAULT_PATH),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        # Only a user of its own gets the process limit: the kernel counts every process
        # of the user, and exempts root.
        own_user = user is not None
        command = isolation.wrap(argv, workdir, scratch, user)
        prefix = limits.prefix(processes=own_user)
        command = [*prefix, *command] if prefix is not None else command
        with tempfile.TemporaryFile() as sink:
            started = time.perf_counter()
            process = subprocess.Popen(
                command,
                cwd=workdir,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=None if prefix is not None else limits.setter(processes=own_user),
            )
            timed_out = False
            try:
                process.wait(timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # Whatever it left behind in its group goes too (the namespaces' own
                # processes die with their first process).
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            seconds = time.perf_counter() - started
            sink.seek(0)
            data = sink.read(limits.output_bytes + 1)
        output = data[: limits.output_bytes].decode("utf-8", errors="replace")
        if len(data) > limits.output_bytes:
            output += f"\n... [output cut at {limits.output_bytes} bytes]"
        return Finished(
            exit_code=process.returncode, timed_out=timed_out, output=output, seconds=seconds
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _give(folder: Path, user: int) -> None:
    """Make `folder` (and all in it) the sandbox user's, so the code may write there."""
    os.chown(folder, user, user)
    for root, folders, files in os.walk(folder):
        for name in (*folders, *files):
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(root, name), user, user, follow_symlinks=False)
