"""Files that are not files: a labels path (or one in a folder of labels) that is a FIFO, a
link to an endless device, a socket; each is refused in one line, by the one rule every
file verdryx reads by name goes through (docs/troubleshooting.md, "Reliability").

The commands run in a process of their own with a timeout: a read that waits on a FIFO or
never ends on `/dev/zero` fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.calibration_support import judged_run, label_of
from verdryx_core.judge.calibration import append_label
from verdryx_core.judge.calibration.labels import LabelError, read_labels
from verdryx_core.store import Store
from verdryx_core.untrusted.files import NotARegularFile, read_regular_bytes, read_regular_text

VERDRYX = Path(sys.executable).with_name("verdryx")


def _verdryx(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VERDRYX), *argv], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_run(judged_run([(0.9, "Yes."), (0.2, "No."), (0.8, "Fine.")], run_id="r1"))
    return db


def _labels(path: Path, verdicts: list[str]) -> None:
    run = judged_run([(0.9, "Yes."), (0.2, "No."), (0.8, "Fine.")], run_id="r1")
    for index, verdict in enumerate(verdicts):
        append_label(path, label_of(run, index, verdict))


@pytest.mark.parametrize("kind", ["fifo", "fifo-in-folder", "dev-zero", "dev-urandom"])
def test_judge_agreement_refuses_a_labels_path_that_is_no_regular_file(
    tmp_path: Path, kind: str
) -> None:
    db = _store(tmp_path)
    if kind == "fifo":
        labels = tmp_path / "team.labels.jsonl"
        os.mkfifo(labels)
        words = "it is a FIFO, not a regular file"
    elif kind == "fifo-in-folder":
        labels = tmp_path / "labels"
        labels.mkdir()
        _labels(labels / "a.labels.jsonl", ["pass"])
        os.mkfifo(labels / "b.labels.jsonl")
        words = "it is a FIFO, not a regular file"
    else:
        labels = tmp_path / "team.labels.jsonl"
        labels.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/urandom")
        words = "it is a character device, not a regular file"
    done = _verdryx("judge-agreement", "--db", str(db), "--labels", str(labels), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "labels.jsonl: cannot read the labels file" in line
    assert words in line


def test_judge_agreement_takes_a_folder_of_labels_files(tmp_path: Path) -> None:
    db = _store(tmp_path)
    folder = tmp_path / "labels"
    (folder / "team").mkdir(parents=True)
    _labels(folder / "ann.labels.jsonl", ["pass", "fail"])
    _labels(folder / "team" / "bob.labels.jsonl", ["pass", "pass", "pass"])
    (folder / "notes.txt").write_text("not a labels file: never read\n")
    done = _verdryx(
        "judge-agreement", "--db", str(db), "--labels", str(folder), "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    # ann's two labels, then bob's three (a later label of the same output wins): 3 outputs.
    assert json.loads(done.stdout)["n"] == 3


def test_pytest_with_a_fifo_as_labels_ends_with_one_line(pytester: pytest.Pytester) -> None:
    cases = [
        {"id": "c0", "prompt": "help", "grader": "llm_judge", "rubric": "polite", "output": "Yes."}
    ]
    (pytester.path / "s.evalset.json").write_text(json.dumps({"id": "s", "cases": cases}))
    os.mkfifo(pytester.path / "team.labels.jsonl")
    result = pytester.runpytest_subprocess(
        "--verdryx-judge=stub",
        "--verdryx-labels=team.labels.jsonl",
        "--no-verdryx-store",
        timeout=60,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["ERROR: *team.labels.jsonl: cannot read the labels file: it is a FIFO, not a regular file"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_the_review_page_refuses_to_append_to_a_fifo(tmp_path: Path) -> None:
    # `append_label` opens without blocking: a FIFO with no reader is refused, never waited on.
    fifo = tmp_path / "r.labels.jsonl"
    os.mkfifo(fifo)
    run = judged_run([(0.9, "Yes.")], run_id="r1")
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            append_label(fifo, label_of(run, 0, "pass"))
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=append, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # releases the waiting open
        thread.join(20)
        os.close(reader)
        pytest.fail("appending a label to a FIFO waited for a reader")
    assert isinstance(outcome[0], NotARegularFile) and outcome[0].kind == "a FIFO"


def test_the_rule_reads_regular_files_and_links_to_them(tmp_path: Path) -> None:
    real = tmp_path / "a.txt"
    real.write_bytes(b"one\r\ntwo\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    assert read_regular_bytes(link) == b"one\r\ntwo\n"
    assert read_regular_text(link) == "one\ntwo\n"  # as Path.read_text reads it
    with pytest.raises(NotARegularFile, match="it is a folder, not a regular file"):
        read_regular_bytes(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_regular_bytes(tmp_path / "missing")


def test_a_missing_labels_file_is_still_its_own_line(tmp_path: Path) -> None:
    with pytest.raises(LabelError, match="no such labels file"):
        read_labels([tmp_path / "nope.labels.jsonl"])


@pytest.mark.parametrize(
    ("argv", "name", "words"),
    [
        (["eval", "{path}"], "s.evalset.json", "cannot read: it is a FIFO, not a regular file"),
        (
            ["eval", "ok.evalset.json", "--prices", "{path}"],
            "prices.json",
            "cannot read the price file (it is a FIFO, not a regular file)",
        ),
        (
            ["cost-per-correct", "--input", "{path}"],
            "runs.ndjson",
            "cannot open (it is a FIFO, not a regular file)",
        ),
        (
            ["cost-per-correct", "--input", "{path}"],
            "runs.csv",
            "cannot open (it is a FIFO, not a regular file)",
        ),
    ],
    ids=["evalset", "prices", "ndjson", "csv"],
)
def test_the_other_files_read_by_name_refuse_a_fifo(
    tmp_path: Path, argv: list[str], name: str, words: str
) -> None:
    case = {"id": "c", "prompt": "p", "expected": "x"}  # asks the model: prices are read
    (tmp_path / "ok.evalset.json").write_text(json.dumps({"id": "ok", "cases": [case]}))
    os.mkfifo(tmp_path / name)
    command = [part.format(path=name) for part in argv]
    if command[0] == "eval":
        command += ["--db", str(tmp_path / "v.db")]
    done = _verdryx(*command, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert name in line and words in line, line
