"""Bars that mean what they say: inside `checks`, a grader's own pass bar (tool_trace, exec,
final_state 1.0) holds unless the check sets `min_score`, for the case's pass and for each
sample of pass@k; and the marker's `verdryx.grade()` takes a whole result for every grader,
failing the test (never scoring the agent) on a value no grader reads (docs/graders.md,
"Multi-check cases"; docs/custom-cases.md, "What grade() takes").

Real pytest sessions through `pytester`, runs read back from SQLite, exec in the sandbox."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from plugin_support import stored_runs, write_evalset
from test_exec_grader import needs_isolation

from verdryx_core import evaluate
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import EvalSettings
from verdryx_core.runs import Score
from verdryx_core.targets import TargetCase

#: An agent that looks the order up and forgets to refund it, but says it did.
AGENT = textwrap.dedent(
    """
    def answer(case):
        return {"output": "Your refund for A-1 is on its way.",
                "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]}
    """
)
TRACE = {
    "grader": "tool_trace",
    "expected_tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
        {"name": "refund_order", "arguments": {"order_id": "A-1"}},
    ],
}
REPLY = {"grader": "icontains", "expected": "refund for A-1"}


def test_a_trace_below_its_own_bar_fails_the_case_unless_the_check_lowers_it(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "support_agent.py").write_text(AGENT, encoding="utf-8")
    write_evalset(
        pytester.path,
        "support",
        "support",
        [
            {"id": "strict", "prompt": "Refund A-1", "checks": [TRACE, REPLY]},
            {
                "id": "lenient",
                "prompt": "Refund A-1",
                "checks": [{**TRACE, "min_score": 0.5}, REPLY],
            },
        ],
    )
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", "--verdryx-target=support_agent:answer"
    )
    result.assert_outcomes(passed=1, failed=1)
    # The mean, 0.75, reaches the case's bar: the report says which check did not reach its own.
    result.stdout.fnmatch_lines(
        [
            "*support::strict scored 0.750, at the pass bar 0.5, but check #1 tool_trace scored"
            " 0.500, below its own bar 1  [[]grader: checks]*",
            "*#1 tool_trace on tool_calls: 0.500 (weight 1)*",
        ]
    )
    (run,) = stored_runs(db)
    scores = {s.case_id: s for s in run.scores}
    assert scores["strict"].value == scores["lenient"].value == pytest.approx(0.75)
    assert (scores["strict"].passed, scores["lenient"].passed) == (False, True)
    # Each check's bar is kept with it in the store.
    assert [c.bar for c in scores["strict"].checks] == [1.0, None]
    assert [c.bar for c in scores["lenient"].checks] == [0.5, None]
    assert "below its bar 1" in (scores["strict"].reason or "")


def test_a_checks_bar_is_refused_at_zero(tmp_path: Path) -> None:
    path = write_evalset(
        tmp_path, "z", "z", [{"id": "z", "prompt": "p", "checks": [{**REPLY, "min_score": 0}]}]
    )
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    assert "field 'checks[0].min_score'" in str(caught.value)
    assert "passes every output" in str(caught.value)


HALF_FIXED = "def add(a, b):\n    return a + b if a < 5 else 0\n"
ADD_TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_large():\n    assert add(7, 2) == 9\n"
)


@needs_isolation
def test_half_fixed_code_is_no_pass_for_pass_at_k(tmp_path: Path) -> None:
    def coder(case: TargetCase) -> str:
        return HALF_FIXED

    exec_check = {"grader": "exec", "tests": ADD_TESTS}
    cases = [
        {"id": "alone", "prompt": "fix add", "aggregate": "pass@1", "checks": [exec_check]},
        {
            "id": "carried",
            "prompt": "fix add",
            "checks": [exec_check, {"grader": "regex", "expected": "def add"}],
        },
        {
            "id": "allowed",
            "prompt": "fix add",
            "aggregate": "pass@1",
            "checks": [{**exec_check, "min_score": 0.5}],
        },
    ]
    path = write_evalset(tmp_path, "code", "code", cases)
    run = evaluate([path], EvalSettings(repeat=2), target=coder)
    scores: dict[str, Score] = {s.case_id: s for s in run.scores}
    # Half the tests pass in every sample: no sample passes its exec check's bar of 1.0.
    assert scores["alone"].value == 0.0 and scores["alone"].passed is False
    assert scores["alone"].sample_passes() == (False, False)
    # A regex reply cannot carry it: the mean is 0.75, the case is not passed, and each
    # sample counts as failed in the stability label and the gate's pass rate.
    carried = scores["carried"]
    assert carried.value == pytest.approx(0.75) and carried.passed is False
    assert carried.sample_passes() == (False, False)
    # The check's own min_score is the one place a lower bar is asked for.
    assert scores["allowed"].value == 1.0 and scores["allowed"].passed is True


#: A target's result, as a test gets it from the agent it calls.
RESULT = {
    "output": "Refunded A-1.",
    "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}],
    "state": {"A-1": "refunded"},
}


def test_grade_takes_a_result_for_every_grader_and_a_wrong_value_fails_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_marked=f"""
        import pytest
        from verdryx_core.targets import TargetResult

        RESULT = {RESULT!r}
        CALLS = [{{"name": "lookup_order", "arguments": {{"order_id": "A-1"}}}}]

        @pytest.mark.verdryx(grader="tool_trace", expected_tool_calls=CALLS)
        def test_trace_of_a_dict(verdryx):
            verdryx.grade(RESULT)

        @pytest.mark.verdryx(grader="tool_trace", expected_tool_calls=CALLS)
        def test_trace_of_a_result(verdryx):
            verdryx.grade(TargetResult(**RESULT))

        @pytest.mark.verdryx(grader="contains", expected="Refunded A-1")
        def test_text_of_a_result(verdryx):
            verdryx.grade(TargetResult(**RESULT))

        @pytest.mark.verdryx(grader="final_state", expected={{"A-1": "refunded"}})
        def test_state_of_a_dict(verdryx):
            verdryx.grade(RESULT)

        @pytest.mark.verdryx(grader="json", fields={{"output": "x"}})
        def test_an_object_that_is_no_result(verdryx):
            verdryx.grade({{"output": "x", "id": 7}})

        @pytest.mark.verdryx(grader="tool_trace", expected_tools=["lookup_order"])
        def test_trace_of_text(verdryx):
            verdryx.grade("lookup_order")

        @pytest.mark.verdryx(grader="tool_trace", expected_tools=["lookup_order"])
        def test_a_bad_result_dict(verdryx):
            verdryx.grade({{"output": "x", "tool_calls": 3}})
        """
    )
    db = pytester.path / "s.db"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--verdryx-db={db}", "-rf")
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_trace_of_text: verdryx.grade(): grader 'tool_trace' grades the tool calls"
            " made: a list of names or {name, arguments} objects, or a whole result*; got str",
            "*test_a_bad_result_dict: verdryx.grade(): a result dict: tool_calls is 3, expected"
            " a list of*",
        ]
    )
    # A test's mistake is not the agent's: no score is recorded for it.
    result.stdout.fnmatch_lines(["*cases: 5 passed, 0 failed, 0 unmeasured*"])


def test_stored_check_results_read_back_with_their_bars(tmp_path: Path) -> None:
    def agent(case: TargetCase) -> dict[str, Any]:
        return json.loads(json.dumps(RESULT))

    path = write_evalset(
        tmp_path,
        "s",
        "s",
        [{"id": "s", "prompt": "Refund A-1", "checks": [TRACE, {**REPLY, "min_score": 0.9}]}],
    )
    db = tmp_path / "s.db"
    evaluate([path], target=agent, store=db)
    (run,) = stored_runs(db)
    (score,) = run.scores
    assert [c.bar for c in score.checks] == [1.0, 0.9]
    assert score.passed is False
