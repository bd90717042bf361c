"""Sandboxed runs: a command in its own root (`Isolation`, `View`), limited (`Limits`),
stopped with everything it started at the wall-clock limit, its output capped.

The child's environment is built from nothing: a private home and temporary folder, PATH,
a UTF-8 locale; nothing of verdryx's own environment (API keys) reaches it. Unisolated
(`--verdryx-unsafe-exec`), the command runs under a supervisor that is its child subreaper
(`harness/reaper.py`), so even a process that left its session is gone when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from verdryx_core.sandbox.isolation import (
    CODE_STARTED,
    HOME,
    SANDBOX_UP,
    Isolation,
    View,
    read_status,
    sandbox_user,
    status_channel,
)
from verdryx_core.sandbox.limits import Limits
from verdryx_core.sandbox.trusted import boot, harness_folder

__all__ = ["Finished", "Started", "give", "run_sandboxed"]

_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
#: How long an unisolated run's supervisor has to stop what the command left, once told.
_REAPER_GRACE_S: Final = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """How a run ended: its exit code (negative: the signal that killed it), whether the
    wall clock ran out, its output (capped) and its wall time; and how far it got, as the
    sandbox's own setup said on its status channel (`isolation.SANDBOX_UP`), which nothing
    of the code's writes: `sandbox_up` (the setup ran in the sandbox) and `code_started`
    (it handed over to the command). A failure before the code started is the sandbox's;
    anything after it is the code's, whatever its output reads like."""

    exit_code: int
    timed_out: bool
    output: str
    seconds: float
    sandbox_up: bool = True
    code_started: bool = True

    @property
    def signal_name(self) -> str | None:
        if self.exit_code >= 0:
            return None
        try:
            return signal.Signals(-self.exit_code).name
        except ValueError:
            return f"signal {-self.exit_code}"


class Started:
    """One sandboxed process, running: `wait` for it, then `finish` (which stops whatever is
    left of it and removes its scratch folder)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        view: View,
        isolation: Isolation,
        limits: Limits,
        user: int | None,
        env: Mapping[str, str] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.isolation = isolation
        self.limits = limits
        self.scratch = Path(tempfile.mkdtemp(prefix="verdryx-exec-"))
        # Kept open for the run's life (closed by `finish`): no `with` spans it.
        self.sink: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.status: int | None = None
        status_in: int | None = None
        try:
            self.status, status_in = status_channel()
            if isolation.isolated:
                home, tmp = HOME, "/tmp"
                command = isolation.wrap(argv, view, user, self.scratch)
            else:
                home, tmp = str(self.scratch / "home"), str(self.scratch / "tmp")
                os.mkdir(home)
                os.mkdir(tmp)
                where = str(harness_folder())
                command = [
                    sys.executable, "-I", "-B", "-c", boot(where, "reaper", "main()"), *argv,
                ]  # fmt: skip
            child_env = {
                "PATH": os.environ.get("PATH", _DEFAULT_PATH),
                "HOME": home,
                "TMPDIR": tmp,
                "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1",
                **(env or {}),
            }
            # Only a user of its own gets the process limit: the kernel counts every process
            # of the user, and exempts root.
            own_user = user is not None
            prefix = limits.prefix(processes=own_user)
            if prefix is not None:
                command = [*prefix, *command]
            self.started = time.perf_counter()
            self.process = subprocess.Popen(
                command,
                cwd=isolation.workdir(view) if not isolation.isolated else "/",
                env=child_env,
                # The status channel; the code itself gets /dev/null (isolation.py, reaper.py).
                stdin=status_in,
                stdout=self.sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
                preexec_fn=None if prefix is not None else limits.setter(processes=own_user),
            )
        except BaseException:
            self._clean()
            raise
        finally:
            if status_in is not None:
                os.close(status_in)  # the run holds it now: its end is its own

    def wait(self, timeout: float) -> bool:
        """Whether it ended within `timeout` seconds."""
        try:
            self.process.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return False
        return True

    def finish(self, *, timed_out: bool = False) -> Finished:
        """Stop whatever is left of it; what it did."""
        try:
            self.stop()
            seconds = time.perf_counter() - self.started
            self.sink.seek(0)
            data = self.sink.read(self.limits.output_bytes + 1)
            status = self._read_status()
        finally:
            self._clean()
        output = data[: self.limits.output_bytes].decode("utf-8", errors="replace")
        if len(data) > self.limits.output_bytes:
            output += f"\n... [output cut at {self.limits.output_bytes} bytes]"
        return Finished(
            exit_code=self.process.returncode,
            timed_out=timed_out,
            output=output,
            seconds=seconds,
            # Bytes past the first two are not the setup's: never read.
            sandbox_up=status[:1] == SANDBOX_UP,
            code_started=status[:2] == SANDBOX_UP + CODE_STARTED,
        )

    def stop(self) -> None:
        """Kill it and everything it started. Isolated, its namespaces die with their first
        process; unisolated, its supervisor is told first, and kills what it left."""
        process = self.process
        if not self.isolation.isolated and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_REAPER_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def _read_status(self) -> str:
        read, self.status = self.status, None
        return "" if read is None else read_status(read)

    def _clean(self) -> None:
        self.sink.close()
        if self.status is not None:
            os.close(self.status)
            self.status = None
        shutil.rmtree(self.scratch, ignore_errors=True)


def run_sandboxed(
    argv: Sequence[str],
    *,
    workdir: Path,
    isolation: Isolation,
    limits: Limits,
    env: Mapping[str, str] | None = None,
    user: int | None = None,
) -> Finished:
    """Run `argv` in a copy of `workdir` (its only writable folder, with a private home):
    what it writes there is not kept. Never raises for what the code does; OSError when the
    command cannot be started at all."""
    if user is None and isolation.isolated:
        user = sandbox_user()
    if user is not None:
        give(workdir, user)
    view = View(staging=workdir, workdir=str(workdir), disk_bytes=limits.disk_bytes)
    started = Started(argv, view=view, isolation=isolation, limits=limits, user=user, env=env)
    finished = started.wait(limits.wall_s)
    return started.finish(timed_out=not finished)


def give(folder: Path, user: int) -> None:
    """Make `folder` (and all in it) the sandbox user's, so the code may copy and change it."""
    os.chown(folder, user, user)
    for root, folders, files in os.walk(folder):
        for name in (*folders, *files):
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(root, name), user, user, follow_symlinks=False)
