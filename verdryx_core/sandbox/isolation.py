"""Which kernel isolation this machine offers untrusted code: bubblewrap, else util-linux's
`unshare`, else none (docs/workspaces-and-execution.md, "Isolation").

Detected once per process by running `true` inside each candidate: a binary that exists
but cannot create namespaces here (a container without user namespaces) is not offered.
`VERDRYX_SANDBOX` forces the choice: `bwrap`, `unshare` or `none` (`none` is how a machine
without isolation is simulated; `auto` or unset detects).
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from verdryx_core.errors import UsageError

__all__ = ["ISOLATION_ENV", "Isolation", "detect_isolation", "sandbox_user"]

ISOLATION_ENV: Final = "VERDRYX_SANDBOX"
_CHOICES: Final = ("bwrap", "unshare", "none")
#: When verdryx runs as root, code runs as an unprivileged user of its own, one per run:
#: root ignores the process limit (the kernel exempts it) and may write anywhere, and the
#: kernel counts the limit per user, so runs side by side (or a fork bomb's processes still
#: dying) never share one count. Users are drawn from a block no system account uses, per
#: process id, so xdist workers draw apart.
_FIRST_UID: Final = 1_500_000_000
_UIDS_PER_PROCESS: Final = 4096


@dataclass(frozen=True, slots=True)
class Isolation:
    """How code is wrapped: `name` is what the summary says (`bwrap`, `unshare`, `none`)."""

    name: str
    binary: str | None = None

    @property
    def isolated(self) -> bool:
        return self.binary is not None

    def wrap(
        self, argv: Sequence[str], workdir: Path, scratch: Path, user: int | None
    ) -> list[str]:
        """`argv` to run inside the isolation in `workdir`; `workdir` and `scratch` (its home
        and temporary folder) are the only folders it may write. With a `user` (verdryx
        runs as root), the namespaces are made as root and the code then runs as `user`,
        with no capabilities; the folders the Python runtime needs that `user` could not
        reach (a Python under /root) are shown to it, and nothing else of theirs."""
        command = list(argv)
        if user is not None:
            command = [
                "setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                "--inh-caps=-all", "--", *command,
            ]  # fmt: skip
        if self.name == "bwrap":
            assert self.binary is not None
            where, spare = str(workdir), str(scratch)
            shown: list[str] = []
            groups = _shown(user, workdir, scratch)
            for hidden, paths in groups:
                shown += ["--perms", "0755", "--tmpfs", hidden]
                for path in paths:
                    # The folders on the way, enterable (bwrap would make them 0700).
                    for folder in reversed(Path(path).parents):
                        if len(folder.parts) > len(Path(hidden).parts):
                            shown += ["--perms", "0755", "--dir", str(folder)]
                    if path not in (where, spare):
                        shown += ["--ro-bind", path, path]
            # As root, no user namespace: root's own would leave `user` unmapped.
            spaces = (
                ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--cap-add", "CAP_SETUID,CAP_SETGID"]
                if user is not None
                else ["--unshare-all"]
            )  # fmt: skip
            return [
                self.binary,
                "--ro-bind", "/", "/",
                "--dev", "/dev",
                "--proc", "/proc",
                *shown,
                "--bind", where, where,
                "--bind", spare, spare,
                # What stands in for a hidden folder is as read-only as the rest.
                *[arg for hidden, _ in groups for arg in ("--remount-ro", hidden)],
                *spaces,
                "--die-with-parent",
                "--new-session",
                "--chdir", where,
                "--",
                *command,
            ]  # fmt: skip
        if self.name == "unshare":
            assert self.binary is not None
            spaces = [] if user is not None else ["--user", "--map-root-user"]
            return [
                self.binary,
                *spaces, "--net", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child",
                "sh", "-c", _unshare_setup(workdir, scratch, user), "sh", *command,
            ]  # fmt: skip
        return command


def _unshare_setup(workdir: Path, scratch: Path, user: int | None) -> str:
    """The shell run inside unshare's new mount namespace before the code: `workdir` and
    `scratch` stay writable (a bind mount of their own each), hidden folders are shown (as
    bwrap does), every other mount becomes read-only. Mount points come from mountinfo,
    whose field 5 is the mount point."""
    where, spare = shlex.quote(str(workdir)), shlex.quote(str(scratch))
    lines = [f"mount --bind {where} {where} || exit 97", f"mount --bind {spare} {spare} || exit 97"]
    groups = _shown(user, workdir, scratch)
    if groups:
        # Each shown folder is held at a mount point outside every hidden folder while the
        # tmpfs goes over, then moved back; the points are removed once empty.
        holder = Path(tempfile.mkdtemp(prefix="verdryx-keep-", dir=_open_tmp()))
        count = 0
        moves: list[str] = []
        for hidden, paths in groups:
            kept = []
            for path in paths:
                keep = shlex.quote(str(holder / str(count)))
                count += 1
                lines.append(f"mkdir {keep} && mount --bind {shlex.quote(path)} {keep} || exit 97")
                kept.append((keep, shlex.quote(path)))
            lines.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(hidden)} || exit 97")
            moves += [
                f"mkdir -p {path} && mount --bind {keep} {path} && umount {keep} && rmdir {keep}"
                " || exit 97"
                for keep, path in kept
            ]
        lines += moves
        lines.append(f"rmdir {shlex.quote(str(holder))}")
    lines.append(
        "for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do "
        f'case "$m" in {where}|{spare}) ;; '
        '*) mount -o remount,bind,ro "$m" 2>/dev/null ;; esac; done'
    )
    lines.append(f'cd {where} && exec "$@"')
    return "\n".join(lines)


def _open_tmp() -> str:
    """A temporary folder every user may enter (not a private `$TMPDIR`)."""
    for folder in ("/dev/shm", "/var/tmp", "/tmp"):
        if os.path.isdir(folder) and os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return tempfile.gettempdir()


def _shown(
    user: int | None, workdir: Path, scratch: Path
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What `user` must be shown behind folders it cannot enter: the Python runtime, and
    the work folders themselves (a workspace under a private temporary folder)."""
    if user is None:
        return ()
    return _grouped((*_runtime_paths(), str(workdir), str(scratch)))


@cache
def _runtime_paths() -> tuple[str, ...]:
    """The folders of the running Python: interpreter, prefixes, import path."""
    wanted = {os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.exec_prefix}
    wanted.update(entry for entry in sys.path if entry and os.path.isdir(entry))
    return tuple(sorted(os.path.realpath(path) for path in wanted))


def _grouped(paths: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`paths` behind a folder other users cannot enter, grouped by the outermost such
    folder: (hidden, paths in it)."""
    groups: dict[str, set[str]] = {}
    for path in paths:
        hidden = _first_closed(path)
        if hidden is not None:
            groups.setdefault(hidden, set()).add(path)
    return tuple((hidden, _outermost(found)) for hidden, found in sorted(groups.items()))


def _first_closed(path: str) -> str | None:
    """The outermost folder on the way to `path` (not `path` itself) that other users
    cannot enter."""
    for folder in reversed(Path(path).parents):
        try:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return str(folder)
        except OSError:
            return None
    return None


def _outermost(paths: set[str]) -> tuple[str, ...]:
    """`paths` less those inside another of them."""
    kept: list[str] = []
    for path in sorted(paths):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return tuple(kept)


_NONE: Final = Isolation("none")
_lock = threading.Lock()
_detected: dict[str, Isolation] = {}
_next_uid = itertools.count()


def sandbox_user() -> int | None:
    """The uid the next run's code runs as: a fresh unprivileged one when verdryx runs as
    root, else None (as verdryx's own user)."""
    if os.geteuid() != 0:
        return None
    base = _FIRST_UID + (os.getpid() % 100_000) * _UIDS_PER_PROCESS
    return base + next(_next_uid) % _UIDS_PER_PROCESS


def detect_isolation() -> Isolation:
    """The isolation to use (`VERDRYX_SANDBOX`, else the first candidate that works here).
    A forced choice that does not work here is a UsageError."""
    wanted = os.environ.get(ISOLATION_ENV, "auto").strip().lower() or "auto"
    if wanted not in (*_CHOICES, "auto"):
        raise UsageError(
            f"{ISOLATION_ENV}={wanted!r} is not one of auto, {', '.join(_CHOICES)}",
            hint="unset it to detect the isolation this machine offers",
        )
    with _lock:
        found = _detected.get(wanted)
        if found is None:
            found = _detected[wanted] = _detect(wanted)
    return found


def _detect(wanted: str) -> Isolation:
    if wanted == "none":
        return _NONE
    names = ("bwrap", "unshare") if wanted == "auto" else (wanted,)
    for name in names:
        binary = shutil.which(name)
        if binary is not None and _works(Isolation(name, binary)):
            return Isolation(name, binary)
    if wanted != "auto":
        raise UsageError(
            f"{ISOLATION_ENV}={wanted}: {wanted} cannot create namespaces on this machine",
            hint="install bubblewrap, or unset it",
        )
    return _NONE


def _works(isolation: Isolation) -> bool:
    with tempfile.TemporaryDirectory(prefix="verdryx-probe-") as folder:
        workdir = Path(folder)
        user = sandbox_user()
        if user is not None:
            os.chown(workdir, user, user)
        try:
            done = subprocess.run(
                isolation.wrap(["true"], workdir, workdir, user),
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
    return done.returncode == 0
