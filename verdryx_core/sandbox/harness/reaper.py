"""An unisolated run's supervisor (`--verdryx-unsafe-exec`): every process the command
starts is gone when it ends, including one that left its session or its parent
(docs/workspaces-and-execution.md, "Isolation").

It makes itself the child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`): a process whose
parent dies is handed to it, not to init, so each process the command started stays one of
its descendants whatever `setsid` or double forks it tried. When the command exits, or when
this supervisor is told to stop (SIGTERM, at the wall clock), it kills its descendants
until none is left, then exits with the command's status. It reports on its standard input,
the run's status channel, that it started and that it hands over to the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any, Final, NoReturn

__all__ = ["main"]

_PR_SET_CHILD_SUBREAPER: Final = 36


def _report(stage: bytes) -> None:
    """Say how far the run got on its status channel, this process's standard input (as the
    isolated runs' setup does: verdryx_core/sandbox/isolation.py)."""
    with contextlib.suppress(OSError):
        os.write(0, stage)


def main() -> NoReturn:
    """Run `sys.argv[1:]` as the command."""
    _report(b"1")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write("verdryx-sandbox: could not become a subreaper\n")
        os._exit(97)

    def stop(signum: int, frame: Any) -> None:
        _kill_descendants()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    _report(b"2")
    try:
        # The command's standard input is /dev/null: the status channel is not its to write.
        child = subprocess.Popen(sys.argv[1:], close_fds=False, stdin=subprocess.DEVNULL)
    except OSError as exc:
        sys.stderr.write(f"verdryx-sandbox: {exc}\n")
        os._exit(127)
    code = child.wait()
    _kill_descendants()
    os._exit(code if code >= 0 else 128 - code)


def _kill_descendants() -> None:
    me = os.getpid()
    for _ in range(200):
        found = _descendants(me)
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        if not found and not _descendants(me):
            return
        time.sleep(0.005)


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _descendants(root: int) -> list[int]:
    """Every process below `root`, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold anything: read after the last.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    waiting = [root]
    while waiting:
        for child in parents.get(waiting.pop(), ()):
            found.append(child)
            waiting.append(child)
    return found
