"""Lenient graders and loose writes: a json output with a key given twice is a failed parse
with its reason; a contains / icontains / regex expectation that every output meets is
refused at load naming the file, the case and the field; an atomic write reaches the disk
(the file and its folder are fsynced) before it counts as written (docs/graders.md;
docs/troubleshooting.md, "Reliability: stored data").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.graders.json_output import json_score
from verdryx_core.untrusted.json_input import StrictJSONError, parse_json

# -- json: a key given twice -------------------------------------------------------------------

keys = st.text(alphabet="abcxyz_", min_size=1, max_size=4)
values = st.integers(-5, 5) | st.booleans() | st.none() | st.text(max_size=3)


def _nest(document: str, depth: int) -> str:
    for level in range(depth):
        document = f'{{"level{level}": [{document}]}}'
    return document


@settings(max_examples=80, deadline=None)
@given(key=keys, first=values, second=values, depth=st.integers(0, 4), fenced=st.booleans())
def test_a_json_output_with_a_key_given_twice_fails_naming_the_key(
    key: str, first: Any, second: Any, depth: int, fenced: bool
) -> None:
    inner = f'{{"{key}": {json.dumps(first)}, "other": 0, "{key}": {json.dumps(second)}}}'
    text = _nest(inner, depth)
    if fenced:
        text = f"```json\n{text}\n```"
    # Whatever the expectation, even the value Python would have kept: the output is no JSON.
    kept = json.loads(inner)
    for expected in (None, json.dumps(kept), json.dumps(_value(kept))):
        value, failed = json_score(text, expected=expected)
        assert value == 0.0
        assert failed == [f"the output is not JSON: the key {key!r} appears twice in one object"]


def _value(document: dict[str, Any]) -> dict[str, Any]:
    return {name: item for name, item in document.items() if name != "other"}


def test_keys_that_differ_only_by_escape_or_case_are_two_keys_or_one_as_json_says() -> None:
    # "\u0061" is "a": the same key, given twice.
    assert json_score('{"a": 1, "\\u0061": 1}')[0] == 0.0
    assert json_score('{"a": 1, "A": 1}', expected='{"A": 1, "a": 1}') == (1.0, [])
    # Two objects may each have the key once.
    assert json_score('[{"a": 1}, {"a": 2}]', expected='[{"a": 1}, {"a": 2}]') == (1.0, [])


def test_parse_json_keeps_its_lenient_default_and_strict_on_request() -> None:
    assert parse_json('{"k": 1, "k": 2}') == {"k": 2}  # other readers are unchanged
    with pytest.raises(StrictJSONError, match="'k' appears twice"):
        parse_json('{"k": 1, "k": 2}', unique_keys=True)


def _evalset(tmp_path: Path, cases: list[dict[str, Any]], **extra: Any) -> Path:
    path = tmp_path / "lenient.evalset.json"
    path.write_text(json.dumps({"id": "lenient", "cases": cases, **extra}))
    return path


def test_a_json_expectation_with_a_key_given_twice_is_refused_at_load(tmp_path: Path) -> None:
    path = _evalset(
        tmp_path, [{"id": "dup", "prompt": "p", "grader": "json", "expected": '{"z": 1, "z": 1}'}]
    )
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    assert caught.value.case == "'dup' (#1)" and caught.value.field == "expected"
    assert "'z' appears twice" in str(caught.value)


# -- contains / icontains / regex: an expectation every output meets ----------------------------

VACUOUS = [
    pytest.param(
        {"grader": "contains", "expected": "   ", "normalize_whitespace": True}, id="spaces"
    ),
    pytest.param({"grader": "contains", "expected": "?!.", "ignore_punctuation": True}, id="punct"),
    pytest.param(
        {"grader": "icontains", "expected": "\t\n", "normalize_whitespace": True}, id="i-tabs"
    ),
    pytest.param({"grader": "regex", "expected": "(?:)"}, id="empty-group"),
    pytest.param({"grader": "regex", "expected": "x*"}, id="star"),
    pytest.param({"grader": "regex", "expected": "^"}, id="caret"),
    pytest.param({"grader": "regex", "expected": "$|never"}, id="alternation"),
    pytest.param({"grader": "regex", "expected": "(?s).{0,3}"}, id="bounded-any"),
]


@pytest.mark.parametrize("grading", VACUOUS)
def test_an_expectation_every_output_meets_is_refused_naming_file_case_and_field(
    tmp_path: Path, grading: dict[str, Any]
) -> None:
    cases = [
        {"id": "fine", "prompt": "p", "expected": "yes"},
        {"id": "vacuous", "prompt": "p", **grading},
    ]
    path = _evalset(tmp_path, cases)
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    error = caught.value
    assert error.path == str(path) and error.case == "'vacuous' (#2)"
    assert error.field == "expected"
    assert "could never fail" in str(error) and "\n" not in str(error)


def test_the_same_expectation_in_a_check_or_from_defaults_is_refused(tmp_path: Path) -> None:
    checks = [{"grader": "exact", "expected": "a"}, {"grader": "regex", "expected": "a?"}]
    path = _evalset(tmp_path, [{"id": "multi", "prompt": "p", "checks": checks}])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    assert caught.value.field == "checks[1].expected"
    path = _evalset(
        tmp_path,
        [{"id": "d", "prompt": "p", "grader": "contains", "expected": " \u00a0 "}],
        defaults={"normalize_whitespace": True},
    )
    with pytest.raises(EvalSetError, match=r"case 'd' \(#1\): field 'expected'"):
        load_evalset(path)


@pytest.mark.parametrize(
    "grading",
    [
        {"grader": "contains", "expected": " "},  # a space is a real expectation unnormalised
        {"grader": "contains", "expected": "!", "ignore_case": True},
        {"grader": "regex", "expected": "^$"},  # only an empty output
        {"grader": "regex", "expected": "\\d*x"},
        {"grader": "regex", "expected": "(?m)^\\s*$"},
        {"grader": "regex", "expected": "^[^<>]*$"},  # no brackets: fails on some outputs
        {"grader": "regex", "expected": "^(?!.*secret)"},  # a lookahead is never judged
        {"grader": "regex", "expected": "\\b"},
        {"grader": "icontains", "expected": "OK"},
    ],
)
def test_expectations_that_can_fail_still_load(tmp_path: Path, grading: dict[str, Any]) -> None:
    load_evalset(_evalset(tmp_path, [{"id": "c", "prompt": "p", **grading}]))


def test_the_cli_refuses_the_file_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from verdryx_core.cli import main

    path = _evalset(tmp_path, [{"id": "v", "prompt": "p", "grader": "regex", "expected": ".*"}])
    assert main(["eval", str(path), "--db", str(tmp_path / "v.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "case 'v' (#1): field 'expected'" in err


# -- atomic writes reach the disk ---------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from verdryx_core.atomic import write_text_atomic
    write_text_atomic(Path(sys.argv[1]), "baseline " * 1000)
    """
)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_an_atomic_write_fsyncs_the_file_before_the_rename_and_the_folder_after(
    tmp_path: Path,
) -> None:
    """The system calls of a real write, seen by strace: the temporary file's descriptor is
    fsynced before the rename, the folder's after it."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    target = tmp_path / "out" / "v1.json"
    target.parent.mkdir()
    trace = subprocess.run(
        [
            "strace",
            "-f",
            "-e",
            "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
            sys.executable,
            str(script),
            str(target),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert target.read_text() == "baseline " * 1000
    calls = [line for line in trace.splitlines() if "resumed" not in line]
    opened: dict[int, str] = {}  # descriptor -> path, as of the line being read
    events = []
    for line in calls:
        if found := re.search(r'openat\(AT_FDCWD, "([^"]+)".*\) = (\d+)$', line):
            opened[int(found.group(2))] = found.group(1)
        elif found := re.search(r"\bf(?:data)?sync\((\d+)\)", line):
            events.append(("fsync", opened.get(int(found.group(1)), "?")))
        elif re.search(r"\brename(?:at2?)?\(", line) and ".v1.json." in line:
            events.append(("rename", ""))
    fsynced = [name for kind, name in events if kind == "fsync"]
    rename = events.index(("rename", ""))
    before, after = events[:rename], events[rename:]
    assert any(kind == "fsync" and ".v1.json." in name for kind, name in before), events
    assert ("fsync", str(target.parent)) in after, (events, fsynced)
