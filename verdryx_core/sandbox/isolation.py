"""Which kernel isolation this machine offers untrusted code: bubblewrap, else util-linux's
`unshare`, else none (docs/workspaces-and-execution.md, "Isolation"), and the root it shows
the code (docs/workspaces-and-execution.md, "What the code can see").

Detected once per process by running `true` inside each candidate: a binary that exists
but cannot create namespaces here (a container without user namespaces) is not offered.
`VERDRYX_SANDBOX` forces the choice: `bwrap`, `unshare` or `none` (`none` is how a machine
without isolation is simulated; `auto` or unset detects).

Either way the code gets a root of its own, built on an empty in-memory file system: the
Python runtime read-only (`runtime_paths`: the system's programs and libraries, the
interpreter's prefixes and site-packages), a minimal `/dev`, its own `/proc`, a private
`/tmp` (its home inside), the folders its run names (`Mount`), and its work folder: a
size-capped in-memory file system, filled with a copy of the run's staging folder before the
code starts. Nothing else of the host: no home folders, no checkout, no eval set, no `/run`
and no socket of the host's.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import site
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

__all__ = [
    "CODE_STARTED",
    "HOME",
    "ISOLATION_ENV",
    "SANDBOX_UP",
    "STAGING",
    "Isolation",
    "Mount",
    "View",
    "detect_isolation",
    "read_status",
    "runtime_paths",
    "sandbox_user",
    "status_channel",
]

ISOLATION_ENV: Final = "VERDRYX_SANDBOX"
_CHOICES: Final = ("bwrap", "unshare", "none")
#: When verdryx runs as root, code runs as an unprivileged user of its own, one per run:
#: root ignores the process limit (the kernel exempts it) and may write anywhere, and the
#: kernel counts the limit per user, so runs side by side (or a fork bomb's processes still
#: dying) never share one count. Users are drawn from a block no system account uses, per
#: process id, so xdist workers draw apart.
_FIRST_UID: Final = 1_500_000_000
_UIDS_PER_PROCESS: Final = 4096
#: Where the staging folder is shown, read-only, while it is copied into the work folder.
STAGING: Final = "/.verdryx/staging"
#: The code's home, inside its private /tmp.
HOME: Final = "/tmp/verdryx-home"
#: What the sandbox says when it could not copy the work folder in (before any code ran).
SETUP_FAILED: Final = "verdryx-sandbox:"
_SETUP_EXIT: Final = 97
#: What the sandbox's own setup writes on its status channel, the run's standard input (a
#: pipe only verdryx reads; `status_channel`): `1` once it runs inside the sandbox, `2` as it
#: hands over to the code, which gets /dev/null as its standard input instead. Nothing of
#: the code's can write there, so whether a failure came before the code ran (the sandbox's)
#: or after (the code's) never rests on what the code printed.
SANDBOX_UP: Final = "1"
CODE_STARTED: Final = "2"
#: The system folders shown read-only: programs and the libraries Python and its extensions
#: load (a merged-/usr system has links for the others). No user data lives there.
_SYSTEM: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Of /etc, what the dynamic loader and the links in /usr/bin need; nothing with accounts.
_ETC: Final = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
)
_DEVICES: Final = ("null", "zero", "full", "random", "urandom", "tty")


@dataclass(frozen=True, slots=True)
class Mount:
    """A host folder (or file) shown at `target`, read-only unless `writable`."""

    source: str
    target: str
    writable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """What one run sees besides the runtime: its work folder at `workdir` (an in-memory
    file system of `disk_bytes`, as is its /tmp), filled with a copy of `staging` before the
    command starts, and the `mounts` its run names."""

    staging: Path
    workdir: str
    disk_bytes: int
    mounts: tuple[Mount, ...] = ()


@dataclass(frozen=True, slots=True)
class Isolation:
    """How code is wrapped: `name` is what the summary says (`bwrap`, `unshare`, `none`)."""

    name: str
    binary: str | None = None

    @property
    def isolated(self) -> bool:
        return self.binary is not None

    def workdir(self, view: View) -> str:
        """Where the command finds its work folder: its own copy, or (unisolated) the
        staging folder itself."""
        return view.workdir if self.isolated else str(view.staging)

    def wrap(self, argv: Sequence[str], view: View, user: int | None, scratch: Path) -> list[str]:
        """`argv` to run inside the isolation, in its work folder. With a `user` (verdryx
        runs as root), the namespaces are made as root and the code (the copying in too)
        then runs as `user`, with no capabilities and no way to gain any. `scratch` is a
        host folder of the run's own, removed after it."""
        if self.binary is None:
            return list(argv)
        # Run as the code, before it: copy the staging folder in, enter the work folder.
        # Entry by entry: the work folder itself is the file system's root, not the code's
        # to touch (cp -a of `.` would set its times).
        setup = (
            f"printf {SANDBOX_UP} >&0 2>/dev/null; "
            f"cd {STAGING} || exit {_SETUP_EXIT}; for e in * .[!.]* ..?*; do "
            '{ [ -e "$e" ] || [ -L "$e" ]; } || continue; '
            f'cp -a -- "$e" "$1"/ 0</dev/null || {{ echo "{SETUP_FAILED} the work folder could '
            f'not be copied in" >&2; exit {_SETUP_EXIT}; }}; done; cd "$1" || exit {_SETUP_EXIT}; '
            f'shift; printf {CODE_STARTED} >&0 2>/dev/null; exec "$@" 0</dev/null'
        )
        inner = ["sh", "-c", setup, "sh", view.workdir, *argv]
        if self.name == "bwrap":
            return self._bwrap(inner, view, user)
        return self._unshare(inner, view, user, scratch)

    def _bwrap(self, inner: list[str], view: View, user: int | None) -> list[str]:
        assert self.binary is not None
        size = str(view.disk_bytes)
        command = [*_dropped(user, userns=False), *inner]
        # As root, no user namespace: root's own would leave `user` unmapped.
        spaces = (
            ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--cap-add", "CAP_SETUID,CAP_SETGID"]
            if user is not None
            else ["--unshare-all"]
        )  # fmt: skip
        targets = [path for path, _ in runtime_paths()]
        targets += [mount.target for mount in view.mounts] + [STAGING, view.workdir, HOME]
        # The folders on the way, enterable by the code's user (bwrap would make them 0700).
        shown: list[str] = []
        for folder in _parents(targets):
            shown += ["--perms", "0755", "--dir", folder]
        host, private = _split_private(runtime_paths())
        for path, link in host:
            shown += ["--symlink", link, path] if link is not None else ["--ro-bind", path, path]
        for mount in view.mounts:
            shown += ["--bind" if mount.writable else "--ro-bind", mount.source, mount.target]
        # Shown after the private /tmp is mounted, which would hide them (a venv under /tmp).
        in_tmp: list[str] = []
        for folder in _parents([path for path, _ in private], within="/tmp"):
            in_tmp += ["--perms", "0755", "--dir", folder]
        for path, link in private:
            in_tmp += ["--symlink", link, path] if link is not None else ["--ro-bind", path, path]
        return [
            self.binary,
            *shown,
            "--dev", "/dev",
            "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
            "--proc", "/proc",
            "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
            *in_tmp,
            "--perms", "0777", "--dir", HOME,
            "--ro-bind", str(view.staging), STAGING,
            "--perms", "0777", "--size", size, "--tmpfs", view.workdir,
            "--remount-ro", "/",
            *spaces,
            "--die-with-parent",
            "--new-session",
            "--chdir", "/",
            "--",
            *command,
        ]  # fmt: skip

    def _unshare(self, inner: list[str], view: View, user: int | None, scratch: Path) -> list[str]:
        assert self.binary is not None
        spaces = [] if user is not None else ["--user", "--map-root-user"]
        command = [*_dropped(user, userns=user is None), *inner]
        return [
            self.binary,
            *spaces, "--net", "--pid", "--fork", "--mount", "--ipc", "--uts", "--kill-child",
            "sh", "-c", _unshare_root(view, scratch), "sh", *command,
        ]  # fmt: skip


def _dropped(user: int | None, *, userns: bool) -> list[str]:
    """The `setpriv` before the code: as root, to `user` with no capabilities; as root of a
    user namespace (unshare without root), keeping uid 0 but with every capability gone and
    none to be had on exec. `no-new-privs` either way: no set-uid program raises it."""
    if user is not None:
        return [
            "setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
            "--inh-caps=-all", "--no-new-privs", "--",
        ]  # fmt: skip
    if userns:
        return [
            "setpriv", "--inh-caps=-all", "--bounding-set=-all",
            "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked",
            "--no-new-privs", "--",
        ]  # fmt: skip
    return []


def _unshare_root(view: View, scratch: Path) -> str:
    """The shell run in unshare's new namespaces, as root there: the same root bwrap builds,
    on a tmpfs (mounted over `scratch/root`, a name only) made the new root with
    `pivot_root`, the host's root then unmounted; then the command."""
    mount_point = scratch / "root"
    mount_point.mkdir(exist_ok=True)
    root = shlex.quote(str(mount_point))
    size = view.disk_bytes
    lines = [
        # The system's tools (pivot_root is in sbin) for the setup only, not for the code.
        "P=$PATH; PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH",
        f"R={root}",
        "mount -t tmpfs -o mode=0755,size=16m tmpfs $R || exit 97",
    ]

    def shown(source: str, target: str, writable: bool) -> None:
        src, dst = shlex.quote(source), shlex.quote(target)
        make = (
            f"mkdir -p $R{dst}"
            if os.path.isdir(source)
            else (f"mkdir -p $R{shlex.quote(os.path.dirname(target))} && touch $R{dst}")
        )
        flags = "bind,nosuid,nodev" + ("" if writable else ",ro")
        lines.append(
            f"{make} && mount --rbind {src} $R{dst} && mount -o remount,{flags} $R{dst} || exit 97"
        )

    def runtime(paths: Sequence[tuple[str, str | None]]) -> None:
        for path, link in paths:
            if link is not None:
                parent = shlex.quote(os.path.dirname(path))
                lines.append(
                    f"mkdir -p $R{parent} && ln -s {shlex.quote(link)} $R{shlex.quote(path)}"
                    " || exit 97"
                )
            else:
                shown(path, path, False)

    host, private = _split_private(runtime_paths())
    runtime(host)
    for mount in view.mounts:
        shown(mount.source, mount.target, mount.writable)
    lines.append("mkdir $R/dev && mount -t tmpfs -o mode=0755,size=1m tmpfs $R/dev || exit 97")
    for device in _DEVICES:
        lines.append(
            f"touch $R/dev/{device} && mount --bind /dev/{device} $R/dev/{device} || exit 97"
        )
    lines += [
        "ln -s /proc/self/fd $R/dev/fd && ln -s /proc/self/fd/0 $R/dev/stdin"
        " && ln -s /proc/self/fd/1 $R/dev/stdout && ln -s /proc/self/fd/2 $R/dev/stderr",
        f"mkdir $R/dev/shm && mount -t tmpfs -o mode=1777,size={size} tmpfs $R/dev/shm || exit 97",
        "mkdir $R/proc && mount -t proc proc $R/proc || exit 97",
        f"mkdir $R/tmp && mount -t tmpfs -o mode=1777,size={size} tmpfs $R/tmp || exit 97",
    ]
    # After the private /tmp, which would hide them (a venv under /tmp).
    runtime(private)
    lines.append(f"mkdir -m 0777 $R{HOME} || exit 97")
    shown(str(view.staging), STAGING, False)
    work = shlex.quote(view.workdir)
    lines += [
        f"mkdir -p $R{work} && mount -t tmpfs -o mode=0777,size={size} tmpfs $R{work} || exit 97",
        "mkdir $R/.old && cd $R && pivot_root . .old && cd / && umount -l /.old"
        " && rmdir /.old && mount -o remount,bind,ro / || exit 97",
        'PATH=$P; exec "$@"',
    ]
    return "\n".join(lines)


@cache
def runtime_paths() -> tuple[tuple[str, str | None], ...]:
    """What of the host the code sees, read-only: `(path, None)` for a folder or file shown
    as it is, `(path, target)` for a link made anew (`/bin -> usr/bin`). The system folders
    and the loader's files of /etc, and the running Python's prefixes and site-packages:
    nothing a `.pth` file adds (an editable install's checkout)."""
    entries: list[tuple[str, str | None]] = []
    folders: list[str] = []
    for path in (*_SYSTEM, *_ETC):
        if os.path.islink(path):
            entries.append((path, os.readlink(path)))
        elif os.path.exists(path):
            folders.append(path)
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python.add(os.path.dirname(os.path.realpath(sys.executable)))
    python.update(site.getsitepackages())
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        python.add(user_site)
    for path in python:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real != "/":
            folders.append(real)
            if os.path.realpath(path) != os.path.abspath(path) and os.path.isdir(path):
                folders.append(os.path.abspath(path))
    linked = {path for path, _ in entries}
    kept = [path for path in _outermost(folders) if not _under_any(path, linked)]
    return (*entries, *((path, None) for path in kept))


def _split_private(
    paths: Sequence[tuple[str, str | None]],
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """`paths` outside the code's private /tmp, and those inside it (shown once it is mounted:
    a checkout or a venv under /tmp is still the running Python's)."""
    host = [entry for entry in paths if not _under_any(entry[0], {"/tmp"})]
    return host, [entry for entry in paths if _under_any(entry[0], {"/tmp"})]


def _parents(paths: Sequence[str], *, within: str | None = None) -> list[str]:
    """The folders on the way to `paths` (not `/`, not a path itself), outermost first: those
    outside /tmp (the code's own), /dev and /proc, or those below `within`."""
    found: set[str] = set()
    for path in paths:
        found.update(str(parent) for parent in Path(path).parents)
    found -= {"/", *paths}
    if within is None:
        kept = [f for f in found if not _under_any(f, {"/tmp", "/dev", "/proc"})]
    else:
        kept = [f for f in found if _under_any(f, {within}) and f != within]
    return sorted(kept, key=lambda f: (f.count("/"), f))


def _under_any(path: str, roots: set[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _outermost(paths: Sequence[str]) -> list[str]:
    """`paths` less those inside another of them."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


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


def status_channel() -> tuple[int, int]:
    """A run's status channel (`SANDBOX_UP`): (read end, write end), the write end to be the
    run's standard input and closed here once it started; the read end never blocks."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    return read, write


def read_status(read: int) -> str:
    """What the sandbox wrote on its status channel so far (closes the read end)."""
    chunks = []
    try:
        while True:
            chunk = os.read(read, 64)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(read)
    return b"".join(chunks).decode("ascii", errors="replace")


def _works(isolation: Isolation) -> bool:
    """Whether `true` runs inside it, its setup reporting on the status channel."""
    with tempfile.TemporaryDirectory(prefix="verdryx-probe-") as folder:
        staging = Path(folder) / "work"
        staging.mkdir()
        user = sandbox_user()
        if user is not None:
            os.chown(staging, user, user)
        view = View(staging=staging, workdir=str(staging), disk_bytes=1 << 20)
        read, write = status_channel()
        try:
            done = subprocess.run(
                isolation.wrap(["true"], view, user, Path(folder)),
                stdin=write,
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            os.close(write)
            status = read_status(read)
    return done.returncode == 0 and status == SANDBOX_UP + CODE_STARTED
