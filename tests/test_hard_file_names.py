"""Eval set file names a pull request controls: a line break, a control or a format character
in a file or folder name is refused at collection (and by `verdryx eval`) in one line naming
the escaped path, and never splits a line of pytest's output into a workflow command
(docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset

VERDRYX = Path(sys.executable).with_name("verdryx")
CASES = [{"id": "c1", "prompt": "p", "grader": "exact", "expected": "ok", "output": "ok"}]

#: (name part, how the refusal shows its character)
HOSTILE = [
    ("a\n::error::x", "'\\x0a'"),
    ("a\r::stop-commands::tok", "'\\x0d'"),
    ("a\u2028::add-mask::x", "'\\u2028'"),
    ("a\x85::error::x", "'\\x85'"),
    ("a\x1b[2Jx", "'\\x1b'"),
    ("refund\u202ex", "'\\u202e'"),
    ("zero\u200bwidth", "'\\u200b'"),
]


def _write(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": "s", "cases": CASES}), encoding="utf-8")
    return path


def _forged_lines(text: str) -> list[str]:
    """Lines (as Python and a CI runner split them) that a runner would read as a command."""
    return [line for line in text.splitlines() if line.lstrip().startswith(("::", "##["))]


def test_hostile_file_names_are_refused_at_collection_in_one_line_each(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for index, (part, _) in enumerate(HOSTILE):
        _write(pytester.path / f"n{index}-{part}.evalset.json")
    (pytester.path / "good.evalset.json").write_text(
        json.dumps({"id": "g", "cases": CASES}), encoding="utf-8"
    )
    result = pytester.runpytest("-v", "-rA", "--continue-on-collection-errors")
    output = result.stdout.str() + result.stderr.str()
    assert _forged_lines(output) == []
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the collection errors fail the session
    refusals = [line for line in output.splitlines() if "the file name holds" in line]
    assert len(refusals) == len(HOSTILE)
    for index, (_, shown) in enumerate(HOSTILE):
        (refusal,) = [line for line in refusals if f"/n{index}-" in line]
        assert f"the control or format character {shown}" in refusal
    assert "Traceback" not in output
    result.stdout.fnmatch_lines(["*good.evalset.json::c1 PASSED*"])


@pytest.mark.parametrize(
    "name", ["::error title=x::forged", "::stop-commands::tok", "a##[group]b", "x##vso[task]y"]
)
def test_a_file_name_that_is_a_workflow_command_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # No control character: at the rootdir the node id itself starts pytest's `-v` lines.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    _write(pytester.path / f"{name}.evalset.json")
    result = pytester.runpytest("-v", "-rA")
    output = result.stdout.str() + result.stderr.str()
    assert _forged_lines(output) == [] and "Traceback" not in output
    refusals = [line for line in output.splitlines() if "would be read as a CI log command" in line]
    assert len(refusals) == 1, output


def test_a_hostile_folder_name_is_refused_too(pytester: pytest.Pytester) -> None:
    _write(pytester.path / "evals\n::error file=x::forged" / "s.evalset.json")
    result = pytester.runpytest("-v")
    output = result.stdout.str()
    assert _forged_lines(output) == []
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the session
    result.stdout.fnmatch_lines(["*evals\\n::error file=x::forged/s.evalset.json: the file name*"])


def test_verdryx_eval_refuses_the_name_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "a\n::error::x.evalset.json")
    done = subprocess.run(
        [str(VERDRYX), "eval", str(path), "--db", str(tmp_path / "v.db")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert _forged_lines(done.stdout + done.stderr) == []
    (line,) = done.stderr.strip().splitlines()
    assert "a\\n::error::x.evalset.json: the file name holds" in line


def test_the_loader_names_the_file_and_reads_plain_names(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match=r"x\\tz\.evalset\.json: the file name holds"):
        load_evalset(_write(tmp_path / "x\tz.evalset.json"))
    # Non-ASCII letters and spaces are names, not controls; a colon or a hash inside is fine.
    assert load_evalset(_write(tmp_path / "Åsa café 1.evalset.json")).id == "s"
    assert load_evalset(_write(tmp_path / "a::b #1 [x].evalset.json")).id == "s"
