"""Eval cases as pytest items: collection, outcomes, custom cases, inertness."""

from __future__ import annotations

import json

import pytest
from plugin_support import FULL, exact_case, stored_runs, trace_case, write_evalset


def test_each_case_is_an_item_with_a_node_id_and_tag_keywords(pytester: pytest.Pytester) -> None:
    write_evalset(
        pytester.path,
        "support",
        "support",
        [
            exact_case("refund-1", "yes", tags=["refund"]),
            exact_case("refund-2", "yes", tags=["refund"]),
            exact_case("greeting", "yes"),
        ],
    )
    result = pytester.runpytest("--collect-only", "-q", "--no-verdryx-store")
    result.stdout.fnmatch_lines(
        [
            "support.evalset.json::refund-1",
            "support.evalset.json::refund-2",
            "support.evalset.json::greeting",
        ]
    )
    selected = pytester.runpytest("-k", "refund", "--no-verdryx-store")
    selected.assert_outcomes(passed=2, deselected=1)
    by_id = pytester.runpytest("support.evalset.json::greeting", "--no-verdryx-store")
    by_id.assert_outcomes(passed=1)


def test_outcomes_follow_the_table(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    write_evalset(
        pytester.path,
        "mixed",
        "mixed",
        [
            exact_case("pass", "yes"),
            exact_case("fail", "Yes "),
            # Passes on its own low bar: f1 1/3 (one word of three), below the default 0.5.
            exact_case(
                "bar", "red cyan pink", expected="red green blue", grader="f1", min_score=0.3
            ),
            {"id": "judge", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"},
        ],
    )
    # With a real model named and no judge, llm_judge cases are skipped: never paid by default.
    result = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-model=claude-x", "-rs")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*mixed::fail scored 0.000, below the pass bar 0.5*[grader: exact]*",
            "*expected: 'yes'*",
            "*output:   'Yes '*",
            "*-yes*",
            "*+Yes *",
            "*SKIPPED*unmeasured: llm_judge cases need a judge model*--verdryx-judge*",
        ]
    )
    run = stored_runs(db)[0]
    assert run.mean_score == pytest.approx((1 + 0 + 1 / 3) / 3)  # the skipped case is no 0.0
    assert [s.case_id for s in run.unmeasured] == ["judge"]


def test_a_case_below_the_bar_in_the_baseline_too_is_xfailed(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    write_evalset(pytester.path, "s", "s", [exact_case("known-bad", "no"), exact_case("ok", "yes")])
    first = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-save-baseline=v1")
    first.assert_outcomes(passed=1, failed=1)
    second = pytester.runpytest(f"--verdryx-db={db}", "--verdryx-baseline=v1", "-rx")
    second.assert_outcomes(passed=2, xfailed=1)  # the cases, and the verdryx::gate test
    second.stdout.fnmatch_lines(["*XFAIL*known-bad*as in baseline v1 (0.000)*"])
    assert second.ret == pytest.ExitCode.OK


def test_min_score_option_and_per_case_bar(pytester: pytest.Pytester) -> None:
    # The first bar that is set: the case's, the run's, the grader's own (1.0 for a tool trace).
    cases = [
        trace_case("partial", ["lookup", "act"], min_score=None),
        trace_case("strict", FULL, min_score=1.0),
        trace_case("lenient", ["lookup"], min_score=0.3),
    ]
    write_evalset(pytester.path, "t", "t", cases)
    pytester.runpytest("--no-verdryx-store").assert_outcomes(passed=2, failed=1)
    pytester.runpytest("--no-verdryx-store", "--verdryx-min-score=0.5").assert_outcomes(passed=3)
    pytester.runpytest("--no-verdryx-store", "--verdryx-min-score=0.9").assert_outcomes(
        passed=2, failed=1
    )


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([{"id": "a"}], "bad.evalset.json: case 'a' (#1)*'prompt'*"),
        (
            [{"id": "a", "prompt": "p", "grader": "fuzzy"}],
            "bad.evalset.json: case 'a' (#1): field 'grader': 'fuzzy' is not a grader",
        ),
        (
            [{"id": "a", "prompt": "p", "expected": "(unclosed"}, {"id": "a", "prompt": "q"}],
            "bad.evalset.json: case 'a' (#2): field 'id': duplicate id",
        ),
    ],
)
def test_a_bad_file_is_one_clean_collection_error(
    pytester: pytest.Pytester, cases: list[dict[str, str]], message: str
) -> None:
    (pytester.path / "bad.evalset.json").write_text(json.dumps({"id": "bad", "cases": cases}))
    write_evalset(pytester.path, "good", "good", [exact_case("fine", "yes")])
    result = pytester.runpytest("--no-verdryx-store", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*{message}*"])
    assert "Traceback" not in result.stdout.str()
    assert "jsonschema" not in result.stdout.str()


def test_invalid_json_names_line_and_column(pytester: pytest.Pytester) -> None:
    (pytester.path / "broken.evalset.json").write_text('{"id": "x",\n "cases": [,]}')
    result = pytester.runpytest("--no-verdryx-store")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection error stops the session
    result.stdout.fnmatch_lines(["*broken.evalset.json: not valid JSON at line 2, column 12*"])


def test_custom_cases_join_the_run(pytester: pytest.Pytester) -> None:
    db = pytester.path / "store.db"
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.verdryx(case_id="greets", grader="regex", expected="(?i)hello")
        def test_greeting(verdryx):
            score = verdryx.grade("Hello there")
            assert score.value == 1.0

        @pytest.mark.verdryx(case_id="scored", min_score=0.8)
        def test_recorded(verdryx):
            verdryx.record(0.7, reason="three of four facts")

        def test_plain():
            assert True
        """
    )
    result = pytester.runpytest(f"--verdryx-db={db}", "--strict-markers")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*scored 0.700, below the pass bar 0.8*", "*three of four facts*"])
    run = stored_runs(db)[0]
    assert {(s.eval_set_id, s.case_id, s.value) for s in run.scores} == {
        ("test_custom.py", "greets", 1.0),
        ("test_custom.py", "scored", 0.7),
    }


def test_the_plugin_is_inert_without_eval_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    body = [line for line in result.outlines if not line.startswith("plugins:")]
    assert not [line for line in body if "verdryx" in line]
    assert not (pytester.path / "verdryx.db").exists()
    assert not list(pytester.path.rglob("*.db"))


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes")])
    result = pytester.runpytest("--verdryx-window=zero")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--verdryx-window: 'zero' is not a whole number*"])
    result = pytester.runpytest("--verdryx-gate=vibes")
    result.stderr.fnmatch_lines(["*--verdryx-gate: 'vibes' is not one of significant, threshold*"])


def test_last_failed_and_deselect_work_as_on_any_test(pytester: pytest.Pytester) -> None:
    write_evalset(
        pytester.path,
        "s",
        "s",
        [exact_case("ok", "yes"), exact_case("bad", "no"), exact_case("other", "yes")],
    )
    first = pytester.runpytest("--no-verdryx-store", "-p", "cacheprovider")
    first.assert_outcomes(passed=2, failed=1)
    again = pytester.runpytest("--no-verdryx-store", "-p", "cacheprovider", "--lf")
    outcomes = again.parseoutcomes()
    assert outcomes["failed"] == 1 and "passed" not in outcomes
    again.stdout.fnmatch_lines(["*rerun previous 1 failure*"])
    deselected = pytester.runpytest(
        "--no-verdryx-store",
        "--deselect",
        "s.evalset.json::bad",
        "--deselect",
        "s.evalset.json::ok",
    )
    deselected.assert_outcomes(passed=1, deselected=2)


def test_two_files_with_one_eval_set_id_are_a_collection_error(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "a", "shared", [exact_case("x", "yes")])
    write_evalset(pytester.path, "b", "shared", [exact_case("y", "yes")])
    result = pytester.runpytest("--no-verdryx-store", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*b.evalset.json: field 'id': eval set id 'shared' is already used by *a.evalset.json*"]
    )


def test_a_report_without_the_store_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_evalset(pytester.path, "s", "s", [exact_case("a", "yes")])
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-report=r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--verdryx-report draws the run history from the store*"])
    assert not list(pytester.path.glob("*.db"))


def test_each_item_reports_its_cases_line_in_the_file(pytester: pytest.Pytester) -> None:
    # A location tools can jump to (pytest-sugar, IDEs): the line the case's object opens on.
    path = write_evalset(
        pytester.path, "lines", "lines", [exact_case("a", "yes"), exact_case("b", "no")]
    )
    text = path.read_text().splitlines()
    expected = {
        case_id: next(n for n, line in enumerate(text) if f'"id": "{case_id}"' in line)
        for case_id in ("a", "b")
    }
    pytester.makeconftest(
        """
        def pytest_collection_modifyitems(items):
            for item in items:
                print("LOCATION", item.name, item.location[1])
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "-s", "--no-verdryx-store")
    found = {
        line.split()[1]: int(line.split()[2])
        for line in result.stdout.lines
        if line.startswith("LOCATION")
    }
    # `location` is 0-based; the object opens on the line before its "id" key.
    assert found == {case_id: line - 1 for case_id, line in expected.items()}
