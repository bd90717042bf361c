"""The plugin collects JSONL and CSV eval sets by default; a bad line is one collection error
naming the file and the line (docs/evalset-reference.md)."""

from __future__ import annotations

import pytest


def test_a_bad_jsonl_line_is_one_collection_error_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.path.joinpath("bad.evalset.jsonl").write_text(
        '{"id": "s"}\n{"id": "a", "prompt": "p", "expected": "x", "output": "x"}\n'
        '{"id": "b", "prompt": "p", "grader": "contains"}\n'
    )
    pytester.path.joinpath("ok.evalset.csv").write_text("id,prompt,expected,output\nc,p,x,x\n")
    result = pytester.runpytest(
        "--continue-on-collection-errors", f"--verdryx-db={pytester.path / 'v.db'}"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*bad.evalset.jsonl:3: case 'b' (#2): field 'expected': grader 'contains' requires*"]
    )
    assert "Traceback" not in result.stdout.str()
