"""Writes never replace what is not a regular file (docs/options.md, "Files verdryx writes").

A report, a baseline file or the gate's JUnit file is written beside its path and renamed
into place; aimed at a device or a FIFO, that rename would replace the node itself (a regular
file where /dev/null was, for the whole machine). A character device is written in place; a
FIFO with a reader too; a FIFO with no reader is refused with one line (a blocking open would
hang the session); a socket is refused. Both faces: the pytest plugin's `--verdryx-report`
and baseline save, and `verdryx report -o`, `verdryx gate --junitxml`, `verdryx baseline
--write-file`.

No test here renames anything over the real /dev/null, even on code without the rule: the
real device is reached through a symlink (the old code replaced the link), and a device of
our own (`mknod`, where the machine allows it) stands in for it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_support import exact_case, write_evalset

from verdryx_core.atomic import write_text_atomic
from verdryx_core.cli import main
from verdryx_core.errors import UsageError


def _is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def _dev_null_is_intact() -> bool:
    status = os.stat("/dev/null")
    return stat.S_ISCHR(status.st_mode) and os.major(status.st_rdev) == 1


def _own_null(path: Path) -> Path:
    """A character device of our own with /dev/null's numbers; skipped where mknod is not
    allowed (not root, or a filesystem mounted nodev)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        path.unlink(missing_ok=True)
        pytest.skip(f"cannot make a character device here: {exc}")
    return path


def _link_to_dev_null(path: Path) -> Path:
    path.symlink_to("/dev/null")
    return path


class _FifoReader:
    """Reads a FIFO from a thread until the writer is done: opened first, without blocking,
    so the writer finds a reader at once."""

    def __init__(self, path: Path) -> None:
        self.descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            # Looked at before the read: the writer was done before `finish`, so a read
            # after it that finds nothing has found everything (looked at after the read,
            # a reader preempted between the two would stop before the data it never read).
            finished = self.done.is_set()
            try:
                chunk = os.read(self.descriptor, 65536)
            except BlockingIOError:
                chunk = None
            if chunk:
                self.data += chunk
            elif finished:
                return
            else:
                time.sleep(0.005)

    def finish(self) -> bytes:
        self.done.set()
        self.thread.join(timeout=30)
        os.close(self.descriptor)
        return bytes(self.data)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "out.fifo"
    os.mkfifo(path)
    yield path
    assert _is_fifo(path), "the FIFO was replaced by a file"


# -- the rule, where it is kept -------------------------------------------------------------


def test_a_fifo_with_a_reader_is_written_in_place(fifo: Path) -> None:
    reader = _FifoReader(fifo)
    text = "x" * 200_000 + "\n"  # more than a pipe holds: the writer waits for the reader
    write_text_atomic(fifo, text)
    assert reader.finish().decode() == text
    assert [p.name for p in fifo.parent.iterdir()] == ["out.fifo"]  # no temp file left


def test_a_fifo_with_no_reader_is_refused_at_once(fifo: Path) -> None:
    started = time.monotonic()
    with pytest.raises(UsageError, match="FIFO with no reader"):
        write_text_atomic(fifo, "text")
    assert time.monotonic() - started < 10
    assert [p.name for p in fifo.parent.iterdir()] == ["out.fifo"]


def test_a_socket_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(UsageError, match="it is a socket"):
            write_text_atomic(path, "text")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.close()


def test_a_character_device_is_written_in_place(tmp_path: Path) -> None:
    device = _own_null(tmp_path / "null")
    write_text_atomic(device, "discarded\n")
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    link = _link_to_dev_null(tmp_path / "link")
    write_text_atomic(link, "discarded\n")
    assert link.is_symlink() and _dev_null_is_intact()


# -- the pytest plugin -----------------------------------------------------------------------


def _one_case_set(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("c1", "yes")])


def test_plugin_report_to_a_fifo_with_no_reader_is_refused_without_hanging(
    pytester: pytest.Pytester, fifo: Path
) -> None:
    _one_case_set(pytester)
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}", f"--verdryx-report={fifo}"
    )
    result.assert_outcomes(passed=1)
    assert result.ret == 0  # the report never fails the eval
    result.stdout.fnmatch_lines(["*report: not written (cannot write*it is a FIFO with no reader*"])


def test_plugin_report_and_baseline_file_on_devices_are_written_in_place(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    _one_case_set(pytester)
    report = _link_to_dev_null(tmp_path / "report.html")
    folder = pytester.path / ".verdryx" / "baselines"
    folder.mkdir(parents=True)
    baseline = _own_null(folder / "v1.json")
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}",
        f"--verdryx-report={report}",
        "--verdryx-save-baseline=v1",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*v1 (mean 1.000) -> *v1.json*", f"*report: {report}*"])
    assert report.is_symlink() and _dev_null_is_intact()
    assert stat.S_ISCHR(os.lstat(baseline).st_mode)


def test_plugin_baseline_save_to_a_fifo_with_no_reader_is_one_error_line(
    pytester: pytest.Pytester,
) -> None:
    _one_case_set(pytester)
    folder = pytester.path / ".verdryx" / "baselines"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "v1.json")
    result = pytester.runpytest(
        f"--verdryx-db={pytester.path / 's.db'}", "--verdryx-save-baseline=v1"
    )
    result.stdout.fnmatch_lines(
        ["*ERROR: baseline 'v1' not saved: cannot write*FIFO with no reader*"]
    )
    assert result.ret != 0
    assert _is_fifo(folder / "v1.json")
    assert [p.name for p in folder.iterdir()] == ["v1.json"]


# -- the command line ------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def stored(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, str]:
    """A store holding one run, and that run's id."""
    evalset = write_evalset(tmp_path, "s", "s", [exact_case("c1", "yes"), exact_case("c2", "no")])
    db = tmp_path / "s.db"
    code, out, err = _cli(capsys, "eval", str(evalset), "--db", str(db), "--json")
    assert code == 1, err  # c2 is below its bar: the run fails, as a pytest session would
    return db, json.loads(out)["run_id"]


def test_cli_report_to_a_fifo_with_no_reader_is_one_error_line(
    capsys: pytest.CaptureFixture[str], stored: tuple[Path, str], fifo: Path
) -> None:
    code, _, err = _cli(capsys, "report", "-o", str(fifo), "--db", str(stored[0]))
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith("error: cannot write") and "FIFO with no reader" in line


def test_cli_report_to_a_fifo_with_a_reader_is_written_into_it(
    capsys: pytest.CaptureFixture[str], stored: tuple[Path, str], fifo: Path
) -> None:
    reader = _FifoReader(fifo)
    code, _, err = _cli(capsys, "report", "-o", str(fifo), "--db", str(stored[0]))
    page = reader.finish().decode()
    assert code == 0, err
    assert page.lstrip().lower().startswith("<!doctype html") and page.rstrip().endswith("</html>")


def test_cli_report_gate_junit_and_baseline_file_on_devices_are_written_in_place(
    capsys: pytest.CaptureFixture[str], stored: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = stored
    report = _link_to_dev_null(tmp_path / "r.html")
    code, _, err = _cli(capsys, "report", "-o", str(report), "--db", str(db))
    assert code == 0, err
    assert report.is_symlink() and _dev_null_is_intact()

    junit = _own_null(tmp_path / "gate.xml")
    code, _, err = _cli(
        capsys,
        "gate",
        "--group",
        "g",
        "--baseline",
        "v1",
        "--junitxml",
        str(junit),
        "--db",
        str(db),
    )
    assert code == 2 and "Traceback" not in err  # no such group: refused, the file written
    assert stat.S_ISCHR(os.lstat(junit).st_mode)

    root = tmp_path / "repo"
    (root / ".verdryx" / "baselines").mkdir(parents=True)
    kept = _link_to_dev_null(root / ".verdryx" / "baselines" / "v1.json")
    code, _, err = _cli(
        capsys, "baseline", run_id, "--label", "v1", "--write-file", str(root), "--db", str(db)
    )
    assert code == 0, err
    assert kept.is_symlink() and _dev_null_is_intact()


def test_cli_baseline_file_on_a_fifo_with_no_reader_is_one_error_line(
    capsys: pytest.CaptureFixture[str], stored: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = stored
    root = tmp_path / "repo"
    folder = root / ".verdryx" / "baselines"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "v1.json")
    code, _, err = _cli(
        capsys, "baseline", run_id, "--label", "v1", "--write-file", str(root), "--db", str(db)
    )
    assert code == 2 and "FIFO with no reader" in err
    assert _is_fifo(folder / "v1.json")
