"""What CI sees from a pytest session (docs/ci.md): the gate as a JUnit testcase counted in
pytest's summary line, GitHub annotations, the job summary; with and without xdist."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Properties, Skipped
from plugin_support import exact_case, write_evalset

XDIST_MODES = [[], ["-n", "2"]]
#: The same, with the xdist variant in the slow step (README.md): the gate's testcase, the
#: annotations and the job summary are written on the controller from the reports that reach
#: it, a path the default step checks under xdist (test_github_annotations_for_failed_cases_and_
#: the_gate, test_verbose_shows_each_cases_score, test_plugin_gate.py's JUnit test).
XDIST_SLOW = [
    pytest.param([], id="mode0"),
    pytest.param(["-n", "2"], id="mode1", marks=pytest.mark.slow),
]


def _cases(failing: int, total: int = 20) -> list[dict[str, object]]:
    return [exact_case(f"c{i}", "no" if i < failing else "yes") for i in range(total)]


def _gated(
    pytester: pytest.Pytester, *, failing: int, extra: list[str]
) -> tuple[pytest.RunResult, Path]:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "s", "s", _cases(0))
    pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    write_evalset(pytester.path, "s", "s", _cases(failing))
    xml = pytester.path / "q.xml"
    result = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-baseline=v1", f"--junitxml={xml}", *extra
    )
    return result, xml


def _gate_case(xml: Path) -> tuple[object, dict[str, str], dict[str, str]]:
    suite = next(iter(JUnitXml.fromfile(str(xml))))
    gates = [case for case in suite if case.classname == "verdryx" and case.name == "gate"]
    assert len(gates) == 1
    suite_props = {prop.name: prop.value for prop in suite.properties()}
    case_props = {p.name: p.value for group in gates[0].iterchildren(Properties) for p in group}
    return gates[0], suite_props, case_props


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_a_regressed_gate_is_a_failed_testcase_with_the_verdict_line(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    result, xml = _gated(pytester, failing=6, extra=mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The verdict fails the session: the six cases below their bar are reported as dropped
    # (xfailed), and the one failure is the gate's, in JUnit as in the exit status.
    result.assert_outcomes(passed=14, failed=1, xfailed=6)
    result.stdout.fnmatch_lines(["FAILED verdryx::gate - verdryx gate: REGRESSED against*"])
    gate, suite, props = _gate_case(xml)
    (failure,) = gate.result
    assert isinstance(failure, Failure)
    low, high = float(suite["verdryx.ci_low"]), float(suite["verdryx.ci_high"])
    assert failure.message == (
        "verdryx gate: REGRESSED against baseline v1: mean 0.700 (baseline 1.000), "
        f"delta -0.300, 95% CI (paired, n=20) [{low:+.3f}, {high:+.3f}]"
    )
    assert props == {"verdryx.verdict": "regressed", "verdryx.verdict_line": failure.message}
    suite_cases = list(next(iter(JUnitXml.fromfile(str(xml)))))
    assert sum(isinstance(r, Failure) for case in suite_cases for r in case.result) == 1
    # The suite's interval is the one the verdict used: the paired one here.
    assert (suite["verdryx.ci_low"], suite["verdryx.ci_high"]) == (
        suite["verdryx.paired_ci_low"],
        suite["verdryx.paired_ci_high"],
    )
    assert high < 0


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_an_on_track_gate_is_a_passed_testcase(pytester: pytest.Pytester, mode: list[str]) -> None:
    result, xml = _gated(pytester, failing=0, extra=mode)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=21)
    gate, suite, props = _gate_case(xml)
    assert list(gate.result) == [] and props["verdryx.verdict"] == "on-track"
    assert props["verdryx.verdict_line"].startswith("verdryx gate: ON-TRACK against baseline v1")
    assert suite["verdryx.verdict"] == "on-track"


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_a_refused_gate_is_an_error_testcase(pytester: pytest.Pytester, mode: list[str]) -> None:
    """The gate cannot read the run history it was asked to pool (--verdryx-window): the store
    file was replaced by something else while the session ran."""
    write_evalset(pytester.path, "s", "s", _cases(0, total=3))
    pytester.runpytest("--no-verdryx-store", "--verdryx-save-baseline=v1")
    db = pytester.path / "history.db"
    pytester.makeconftest(
        f"""
        def pytest_collection_finish(session):
            open({str(db)!r}, "w").write("not a verdryx store")
        """
    )
    xml = pytester.path / "q.xml"
    result = pytester.runpytest(
        "--no-verdryx-store",
        f"--verdryx-db={db}",
        "--verdryx-window=3",
        "--verdryx-baseline=v1",
        f"--junitxml={xml}",
        *mode,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=3, errors=1)
    gate, _, props = _gate_case(xml)
    (error,) = gate.result
    assert isinstance(error, Error)
    assert "verdryx gate refused against baseline v1: " in (error.message or "")
    assert str(db) in (error.message or "")
    assert props["verdryx.verdict"] == "refused"
    assert props["verdryx.verdict_line"] in (error.message or "")


def test_no_baseline_no_gate_testcase_and_an_interrupted_run_is_not_gated(
    pytester: pytest.Pytester,
) -> None:
    write_evalset(pytester.path, "s", "s", _cases(0, total=3))
    xml = pytester.path / "q.xml"
    pytester.runpytest("--no-verdryx-store", f"--junitxml={xml}").assert_outcomes(passed=3)
    suite = next(iter(JUnitXml.fromfile(str(xml))))
    assert [case.classname for case in suite].count("verdryx") == 0

    pytester.runpytest("--no-verdryx-store", "--verdryx-save-baseline=v1")
    write_evalset(pytester.path, "s", "s", _cases(2, total=3))
    result = pytester.runpytest(
        "--no-verdryx-store",
        "--verdryx-baseline=v1",
        "--verdryx-fail-on=cases",
        "-x",
        f"--junitxml={xml}",
    )
    result.assert_outcomes(failed=1, skipped=1)
    gate, _, _ = _gate_case(xml)
    (skipped,) = gate.result
    assert isinstance(skipped, Skipped)
    assert "not gated: the run is incomplete" in (skipped.message or "")


def _annotations(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("::")]


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_github_annotations_for_failed_cases_and_the_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result, xml = _gated(pytester, failing=2, extra=["--verdryx-fail-on=cases", *mode])
    _, suite, _ = _gate_case(xml)
    # Each case object's "{" in the file write_evalset writes (indent=1): line 4 + 6 per case.
    lines = Path(pytester.path / "s.evalset.json").read_text().splitlines()
    assert lines[3].strip() == "{" and lines[4].strip() == '"id": "c0",'
    expected = [
        f"::error file=s.evalset.json,line={4 + 6 * i},title=verdryx%3A s.evalset.json%3A%3Ac{i}"
        f" failed::s::c{i} scored 0.000, below the pass bar 0.5  [grader: exact]%0A"
        "expected: 'yes'%0Aoutput:   'no'%0Adiff:%0A  --- expected%0A  +++ output%0A"
        "  @@ -1 +1 @@%0A  -yes%0A  +no"
        for i in range(2)
    ]
    verdict = suite["verdryx.verdict"]
    got = _annotations(result.stdout.str())
    assert sorted(got[:2]) == sorted(expected)
    if verdict == "regressed":
        assert got[2].startswith("::error title=verdryx gate%3A regressed::verdryx gate: ")
    assert len(got) == 2 + (verdict == "regressed")


def test_no_annotations_outside_github_actions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result, _ = _gated(pytester, failing=6, extra=[])
    assert _annotations(result.stdout.str()) == []


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_the_job_summary_is_appended(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    summary = pytester.path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    result, xml = _gated(pytester, failing=6, extra=["--verdryx-fail-on=cases", *mode])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _, suite, _ = _gate_case(xml)
    low, high = float(suite["verdryx.ci_low"]), float(suite["verdryx.ci_high"])
    run_id = suite["verdryx.run_id"]
    drops = "".join(f"| `s::c{i}` | 1.000 | 0.000 | -1.000 |\n" for i in range(6))
    failed = "".join(
        f"- `s.evalset.json::c{i}` (`s.evalset.json:{4 + 6 * i}`): s::c{i} scored 0.000, below "
        "the pass bar 0.5  \\[grader: exact\\]\n"
        for i in range(6)
    )
    expected_tail = (
        "| | |\n"
        "|---|---|\n"
        f"| run | `{run_id}` (model `stub`) |\n"
        "| mean score | 0.700 over 20 measured cases |\n"
        "| cases | 14 passed, 6 failed, 0 below the bar as in the baseline, 0 unmeasured |\n"
        "| baseline v1 | 1.000 over 20 matched cases |\n"
        "| delta | -0.300 |\n"
        f"| 95% CI | [{low:+.3f}, {high:+.3f}] (paired, n=20) |\n"
        "| verdict | **regressed** (gate: significant) |\n"
        "| spend | $0 (model $0, judge $0), 0 tokens |\n"
        "\n"
        "### Cases that dropped most (6 dropped)\n"
        "\n"
        "| case | baseline | current | change |\n"
        "|---|---:|---:|---:|\n" + drops + "\n### Failed cases (6)\n\n" + failed
    )
    earlier, regressed_heading, text = summary.read_text().partition(
        "## verdryx: REGRESSED against baseline v1\n"
    )
    # Appended: the step before, then the baseline-saving session's summary, then this one.
    assert earlier.startswith("earlier step\n## verdryx: no baseline named\n")
    text = regressed_heading + text
    head = (
        "## verdryx: REGRESSED against baseline v1\n"
        "\n"
        "verdryx gate: REGRESSED against baseline v1: mean 0.700 (baseline 1.000), delta -0.300, "
        f"95% CI (paired, n=20) \\[{low:+.3f}, {high:+.3f}\\]\n"
        "\n"
    )
    if mode:  # xdist reports arrive in any order: compare the failed list as a set
        body, listed = text.split("### Failed cases (6)\n\n")
        assert sorted(listed.splitlines()) == sorted(failed.splitlines())
        assert body == head + expected_tail.split("### Failed cases (6)\n\n")[0]
    else:
        assert text == head + expected_tail


@pytest.mark.parametrize("mode", XDIST_SLOW)
def test_dropped_cases_are_warnings_and_counted_apart(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    """Under the default policy a case below its bar is reported as dropped: a warning
    annotation with its score and its drop, its own count in the job summary; the gate's
    error is the one error."""
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    result, _ = _gated(pytester, failing=3, extra=mode)
    got = _annotations(result.stdout.str())
    warnings = [line for line in got if line.startswith("::warning ")]
    assert len(warnings) == 3
    for line in warnings:
        assert "dropped::dropped: score 0.000 below the bar 0.5 (baseline 1.000, -1.000)" in line
    errors = [line for line in got if line.startswith("::error ")]
    verdict = "regressed" if errors else "on-track"
    assert all("verdryx gate" in line for line in errors)
    assert result.ret == (
        pytest.ExitCode.TESTS_FAILED if verdict == "regressed" else pytest.ExitCode.OK
    )
    text = summary.read_text()
    assert "17 passed, 0 failed, 3 dropped below their bar (the verdict decides)" in text
    assert "### Dropped cases (3)" in text


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_verbose_shows_each_cases_score(pytester: pytest.Pytester, mode: list[str]) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("good", "yes"), exact_case("bad", "no")])
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--no-verdryx-store", "-v", *mode)
    # xdist prints the word before the node id: "[gw0] [ 50%] PASSED (score 1.000) s...::good".
    shown = [
        ("good", "PASSED (score 1.000)"),
        ("bad", "FAILED (score 0.000)"),
    ]
    result.stdout.fnmatch_lines_random(
        [f"*{word}*::{case}*" if mode else f"*::{case} {word}*" for case, word in shown]
    )
    plain = [line for line in result.stdout.lines if "test_plain" in line and "PASSED" in line]
    assert plain and all("score" not in line for line in plain)
    quiet = pytester.runpytest("--no-verdryx-store", *mode)
    assert "(score" not in quiet.stdout.str()
