"""`--tb=line` prints one `path:line: message` line per failed case, and JUnit's failure
message is that one line (the full report stays in the failure's text)."""

from __future__ import annotations

import pytest
from junitparser import Failure, JUnitXml
from plugin_support import exact_case, write_evalset


def _line_of(text: str, case_id: str) -> int:
    """The line of the case's opening brace (the line before its `"id"`)."""
    found = next(n for n, line in enumerate(text.splitlines(), 1) if f'"{case_id}"' in line)
    assert text.splitlines()[found - 2].strip() == "{"
    return found - 1


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_tb_line_prints_one_line_per_failed_case(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    cases = [exact_case("good", "yes"), exact_case("bad", "no"), exact_case("worse", "nope")]
    path = write_evalset(pytester.path, "s", "s", cases)
    text = path.read_text()
    result = pytester.runpytest("--no-verdryx-store", "--tb=line", "--junitxml=out.xml", *mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    bad_line, worse_line = _line_of(text, "bad"), _line_of(text, "worse")
    bad, worse = f"s.evalset.json:{bad_line}: ", f"s.evalset.json:{worse_line}: "
    # Each on its own (xdist finishes them in any order).
    result.stdout.fnmatch_lines([f"*{bad}s::bad scored 0.000, below the pass bar 0.5  *"])
    result.stdout.fnmatch_lines([f"*{worse}s::worse scored 0.000, below the pass bar 0.5  *"])
    # One line each: the rest of the report (expected/output/diff) is not printed.
    assert "expected: 'yes'" not in out and "diff:" not in out
    # Two crash lines and the two `-r` summary lines, nothing else.
    assert out.count("below the pass bar") == 4

    xml = JUnitXml.fromfile(str(pytester.path / "out.xml"))
    failures = {
        case.name: result
        for suite in xml
        for case in suite
        for result in case.result
        if isinstance(result, Failure)
    }
    assert set(failures) == {"bad", "worse"}
    assert failures["bad"].message == "s::bad scored 0.000, below the pass bar 0.5  [grader: exact]"
    # The full report is still the failure's text.
    assert "expected: 'yes'" in (failures["bad"].text or "")


def test_the_default_traceback_style_still_prints_the_whole_report(
    pytester: pytest.Pytester,
) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("bad", "no")])
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["s::bad scored 0.000, below the pass bar 0.5  *", "expected: 'yes'", "diff:"]
    )
