"""An item's report is its own message, never pytest's traceback over the plugin's frames:
a gated run with many excused (xfailed) cases stays at plain pytest's speed (docs/ci.md)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from plugin_support import exact_case, write_evalset

CUSTOM = """
import pytest

@pytest.mark.verdryx(case_id="custom-bad", expected="yes")
def test_custom(verdryx):
    verdryx.grade("no")
"""


def _reports(reprec: pytest.HookRecorder) -> dict[str, pytest.TestReport]:
    """The call-phase report of each item, by the last part of its node id."""
    return {
        report.nodeid.split("::")[-1]: report
        for report in reprec.getreports("pytest_runtest_logreport")
        if report.when == "call"
    }


def test_excused_and_failed_cases_report_their_message_alone(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    cases = [exact_case("known-bad", "no"), exact_case("new", "yes")]
    write_evalset(pytester.path, "s", "s", cases)
    pytester.makepyfile(test_custom=CUSTOM)
    pytester.inline_run(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    write_evalset(pytester.path, "s", "s", [exact_case("known-bad", "no"), exact_case("new", "no")])
    # Cases fail as tests here: the report of a failure is what this checks.
    reprec = pytester.inline_run(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", "--verdryx-fail-on=cases"
    )
    reports = _reports(reprec)

    excused = reports["known-bad"]
    assert excused.skipped and hasattr(excused, "wasxfail")
    assert str(excused.longrepr) == "score 0.000 below the bar 0.5, as in baseline v1 (0.000)"

    custom = reports["test_custom"]
    assert custom.skipped and hasattr(custom, "wasxfail")
    assert str(custom.longrepr).strip() == (
        "score 0.000 below the bar 0.5, as in baseline v1 (0.000)"
    )

    new = reports["new"]
    assert new.failed
    text = str(new.longrepr)
    assert text.startswith("s::new scored 0.000, below the pass bar 0.5")
    assert "Traceback" not in text and "items.py" not in text and "pluggy" not in text


def test_a_new_custom_case_failure_is_its_report_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_custom=CUSTOM)
    reprec = pytester.inline_run("--no-verdryx-store")
    failed = _reports(reprec)["test_custom"]
    assert failed.failed
    text = str(failed.longrepr).strip()
    assert text.startswith("test_custom.py::custom-bad scored 0.000, below the pass bar 0.5")
    assert "fixture.py" not in text and "def test_custom" not in text


UNSHOWN_COUNTS = """
import json, pathlib

def pytest_terminal_summary(terminalreporter):
    filed = terminalreporter.stats.get("", [])
    pathlib.Path("unshown.json").write_text(json.dumps(sorted(
        f"{report.nodeid.rpartition('::')[2]}:{report.when}" for report in filed
    )))
"""

PLAIN_TEST = """
import pytest

@pytest.fixture
def noisy():
    yield
    print("teardown words")

def test_plain(noisy):
    pass
"""


def test_eval_cases_passed_setup_and_teardown_leave_the_terminals_list(
    pytester: pytest.Pytester,
) -> None:
    """pytest looks through its passed setup/teardown reports once per failure it prints;
    an eval case's, which print nothing, are not kept there (docs/ci.md, "Large runs")."""
    cases = [exact_case("good", "yes"), exact_case("bad", "no"), exact_case("worse", "no")]
    write_evalset(pytester.path, "s", "s", cases)
    pytester.makeconftest(UNSHOWN_COUNTS)
    pytester.makepyfile(test_plain=PLAIN_TEST)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("--no-verdryx-store", f"--junitxml={junit}", "-rA")
    result.assert_outcomes(passed=2, failed=2)
    # A plain test's reports stay as pytest keeps them, its teardown output still shown.
    unshown = json.loads((pytester.path / "unshown.json").read_text())
    assert unshown == ["test_plain:setup", "test_plain:teardown"]
    result.stdout.fnmatch_lines(["*Captured stdout teardown*", "teardown words"])
    # The failures are still printed whole, and JUnit still has every case.
    result.stdout.fnmatch_lines(
        ["*_ s::bad [[]exact] _*", "s::bad scored 0.000*", "*_ s::worse [[]exact] _*"]
    )
    cases_in_junit = [case.get("name") for case in ET.parse(junit).getroot().iter("testcase")]
    assert sorted(cases_in_junit) == ["bad", "good", "test_plain", "worse"]
