"""Custom cases (`@pytest.mark.verdryx`) take a file case's fields (docs/custom-cases.md):
real pytest sessions, the run read back from the SQLite store, JUnit read back by a parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from junitparser import JUnitXml, Properties
from plugin_support import stored_runs

from verdryx_core.cases import ToolCall
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store

MODEL = "claude-haiku-4-5"


def _run(pytester: pytest.Pytester, source: str, *args: str) -> tuple[pytest.RunResult, EvalRun]:
    pytester.makepyfile(test_custom=source)
    db = pytester.path / "s.db"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--verdryx-db={db}", *args)
    runs = stored_runs(db)
    assert len(runs) == 1, result.stdout.str()
    return result, runs[0]


def _scores(run: EvalRun) -> dict[str, Score]:
    return {score.case_id: score for score in run.scores}


def _junit(path: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            found[case.name] = {
                p.name: p.value for group in case.iterchildren(Properties) for p in group
            }
    return found


def test_a_list_of_tool_calls_is_graded_and_the_run_is_stored(pytester: pytest.Pytester) -> None:
    result, run = _run(
        pytester,
        """
        import pytest

        @pytest.mark.verdryx(case_id="t", grader="tool_trace", expected_tools=["a", "b"])
        def test_trace(verdryx):
            verdryx.grade([{"name": "a", "arguments": {"x": 1}}, {"name": "b"}])

        @pytest.mark.verdryx(case_id="wrong", grader="tool_trace", expected_tools=["a", "b"])
        def test_wrong(verdryx):
            verdryx.grade([{"name": "b"}, {"name": "a"}])
        """,
        "--junitxml=j.xml",
    )
    result.assert_outcomes(passed=1, failed=1)
    assert "not stored" not in result.stdout.str()
    scores = _scores(run)
    assert scores["t"].value == 1.0 and scores["t"].passed
    assert scores["wrong"].value == 0.5  # LCS 1 of 2, the ordered mode (docs/graders.md)
    # The calls are kept as the JSON text a file case's recorded trace reads as.
    assert scores["t"].output == '{"name":"a","arguments":{"x":1}}, {"name":"b","arguments":{}}'
    assert scores["t"].expected == "a, b"
    junit = _junit(pytester.path / "j.xml")
    assert junit["test_trace"]["verdryx.score"] == "1"
    assert junit["test_wrong"]["verdryx.score"] == "0.5"


def test_expected_calls_with_arguments_and_both_match_modes(pytester: pytest.Pytester) -> None:
    result, run = _run(
        pytester,
        """
        import pytest

        @pytest.mark.verdryx(case_id="sub", grader="tool_trace", argument_match="subset",
                             expected_tool_calls=[{"name": "lookup", "arguments": {"id": "A-1"}}],
                             tool_match="superset")
        def test_subset(verdryx):
            verdryx.grade([{"name": "lookup", "arguments": {"id": "A-1", "x": 2}},
                           {"name": "refund"}])

        @pytest.mark.verdryx(case_id="exact", grader="tool_trace",
                             expected_tool_calls=[{"name": "lookup", "arguments": {"id": "A-1"}}],
                             tool_match="superset")
        def test_exact(verdryx):
            verdryx.grade([{"name": "lookup", "arguments": {"id": "A-1", "x": 2}}])

        @pytest.mark.verdryx(case_id="unordered", grader="tool_trace", tool_match="unordered",
                             expected_tools=["a", "b"])
        def test_unordered(verdryx):
            verdryx.grade(["b", "a"])
        """,
    )
    scores = _scores(run)
    assert scores["sub"].value == 1.0
    assert scores["exact"].value == 0.0  # an extra argument under argument_match exact
    assert scores["unordered"].value == 1.0
    result.assert_outcomes(passed=2, failed=1)


def test_tools_offered_are_checked_against_the_expectation(pytester: pytest.Pytester) -> None:
    result, run = _run(
        pytester,
        """
        import pytest

        TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]

        @pytest.mark.verdryx(case_id="bad", grader="tool_trace", tools=TOOLS,
                             expected_tools=["refund"])
        def test_bad(verdryx):
            verdryx.grade(["refund"])

        @pytest.mark.verdryx(case_id="good", grader="tool_trace", tools=TOOLS,
                             expected_tools=["lookup"])
        def test_good(verdryx):
            verdryx.grade(["lookup"])
        """,
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_custom.py::test_bad: @pytest.mark.verdryx(expected_tools[[]0[]]=...): "
            "tool 'refund' is expected but not offered in 'tools' (offered: lookup)*"
        ]
    )
    assert _scores(run)["good"].value == 1.0


@pytest.mark.parametrize(
    ("marker", "field", "message"),
    [
        ('grader="tool_trace", expected=["a", "b"]', "expected", "*'expected_tools' (names)*"),
        ('grader="exact", expected="x", tool="y"', "tool", "not a field of a custom case*"),
        ('grader="exact", expected="x", min_score="high"', "min_score", "expected number*"),
        ('grader="json", expected="x", tolerance=1', "tolerance", "only valid with grader*"),
        ('grader="llm_judge"', "rubric", "grader 'llm_judge' requires*"),
        ('grader="nope"', "grader", "'nope' is not a grader*"),
    ],
)
def test_a_bad_field_is_one_line_naming_the_test_and_the_field(
    pytester: pytest.Pytester, marker: str, field: str, message: str
) -> None:
    result, run = _run(
        pytester,
        f"""
        import pytest

        @pytest.mark.verdryx(case_id="bad", {marker})
        def test_bad(verdryx):
            verdryx.grade("x")

        @pytest.mark.verdryx(case_id="fine", expected="x")
        def test_fine(verdryx):
            verdryx.grade("x")
        """,
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [f"E  *test_custom.py::test_bad: @pytest.mark.verdryx({field}=...): {message}"]
    )
    # The bad test is an error of its own; the run is stored with the other case.
    assert _scores(run)["fine"].value == 1.0


def test_text_options_json_fields_and_custom_options(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from verdryx_core.graders import Grade, register_grader

        class Keywords:
            def grade(self, case, output, context):
                words = case.options["options"]["keywords"]
                return Grade(value=sum(w in output for w in words) / len(words))

        register_grader("keywords", Keywords(), replace=True)


        def pytest_unconfigure(config):
            # pytester runs this session in the test process: leave no grader behind.
            from verdryx_core.graders import unregister_grader

            unregister_grader("keywords")
        """
    )
    result, run = _run(
        pytester,
        """
        import pytest

        @pytest.mark.verdryx(case_id="case", expected="Hello  World", ignore_case=True,
                             normalize_whitespace=True)
        def test_case(verdryx):
            verdryx.grade("hello world")

        @pytest.mark.verdryx(case_id="json", grader="json", fields={"order.id": 7},
                             schema={"type": "object"})
        def test_json(verdryx):
            verdryx.grade({"order": {"id": 7}})

        @pytest.mark.verdryx(case_id="kw", grader="keywords",
                             options={"keywords": ["refund", "days"]}, min_score=0.5)
        def test_kw(verdryx):
            verdryx.grade("a refund")
        """,
    )
    result.assert_outcomes(passed=3)
    scores = _scores(run)
    assert scores["case"].value == 1.0
    # A dict output is graded as JSON and kept as its JSON text.
    assert scores["json"].value == 1.0
    assert json.loads(scores["json"].output or "") == {"order": {"id": 7}}
    assert scores["kw"].value == 0.5


def test_tags_select_with_k_and_min_score_is_the_bar(pytester: pytest.Pytester) -> None:
    source = """
        import pytest

        @pytest.mark.verdryx(case_id="half", grader="f1", expected="thirty days",
                             min_score=0.7, tags=["refunds"])
        def test_half(verdryx):
            verdryx.grade("thirty")

        @pytest.mark.verdryx(case_id="other", expected="x", tags=["other"])
        def test_other(verdryx):
            verdryx.grade("x")
        """
    result, run = _run(pytester, source, "-k", "refunds")
    result.assert_outcomes(failed=1, deselected=1)
    (half,) = run.scores
    assert half.case_id == "half" and half.value == pytest.approx(2 / 3)
    # Below its own bar 0.7; the run's default bar, 0.5, would have passed it.
    assert half.passed is False


def test_a_required_case_fails_the_session_where_the_verdict_decides(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_custom="""
        import os
        import pytest

        @pytest.mark.verdryx(case_id="must", expected="yes", required=True)
        def test_must(verdryx):
            verdryx.grade(os.environ["ANSWER"])

        @pytest.mark.verdryx(case_id="may", expected="yes")
        def test_may(verdryx):
            verdryx.grade(os.environ["ANSWER"])
        """
    )
    db = pytester.path / "s.db"
    common = ("-p", "no:cacheprovider", f"--verdryx-db={db}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ANSWER", "yes")
        pytester.runpytest(*common, "--verdryx-save-baseline=v1").assert_outcomes(passed=2)
        patch.setenv("ANSWER", "no")
        result = pytester.runpytest(*common, "--verdryx-baseline=v1", "--verdryx-fail-on=verdict")
    # The one not required is dropped (reported, the verdict decides: xfailed).
    assert result.parseoutcomes().get("xfailed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED test_custom.py::test_must*"])
    assert "FAILED test_custom.py::test_may" not in result.stdout.str()


def test_an_llm_judge_case_shows_the_judge_the_prompt(
    pytester: pytest.Pytester, server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    server.judge_score = 0.9
    result, run = _run(
        pytester,
        """
        import pytest

        @pytest.mark.verdryx(case_id="j", grader="llm_judge", rubric="mentions 30 days",
                             prompt="How long is the refund window?")
        def test_judged(verdryx):
            verdryx.grade("30 days")
        """,
        f"--verdryx-judge={MODEL}",
    )
    result.assert_outcomes(passed=1)
    (judged,) = [r for r in server.requests if r.body.get("tool_choice")]
    assert "How long is the refund window?" in judged.user_text
    assert "test_custom.py::test_judged" not in judged.user_text
    assert _scores(run)["j"].value == 0.9


def test_any_output_a_grader_accepted_is_stored_as_text(tmp_path: Path) -> None:
    # Every score passes through Score on its way to the store: a list or an object given
    # as output or expectation is kept as its text, never a value SQLite cannot bind.
    calls = [ToolCall(name="a", arguments={"x": 1}), {"name": "b"}]
    score = Score(
        case_id="c",
        eval_set_id="s",
        value=1.0,
        grader="custom",
        output=calls,  # type: ignore[arg-type]
        expected=["a", "b"],  # type: ignore[arg-type]
        reason={"why": "ok"},  # type: ignore[arg-type]
    )
    run = EvalRun(id="r1", model="stub", started_at=datetime.now(UTC), scores=(score,))
    with Store.open(tmp_path / "s.db") as store:
        store.save_run(run)
        (back,) = store.load_run("r1").scores  # type: ignore[union-attr]
    assert back.output == '{"name":"a","arguments":{"x":1}}, {"name":"b","arguments":{}}'
    assert back.expected == "a, b"
    assert json.loads(back.reason or "") == {"why": "ok"}


def test_a_long_output_is_cut_as_a_file_cases_is(pytester: pytest.Pytester) -> None:
    result, run = _run(
        pytester,
        """
        import pytest

        @pytest.mark.verdryx(case_id="long", grader="contains", expected="end")
        def test_long(verdryx):
            verdryx.grade("x" * 9_000 + " end")
        """,
    )
    result.assert_outcomes(passed=1)
    (score,) = run.scores
    assert score.value == 1.0
    assert score.output is not None and score.output.endswith("... [1004 chars cut]")
    assert len(score.output) < 8_100
