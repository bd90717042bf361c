"""The summary says what happened in words a newcomer reads right: what was called (a sandbox
run on a recorded output is no model call), what produced the outputs (no `model=stub` beside
a target that answered every case), why a group was not compared (unmeasured is not "not in
the baseline"), and a power label whose two numbers never print alike."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plugin_support import write_evalset

from verdryx_core.gating.comparison import compare_to_baseline
from verdryx_core.gating.drift import power_words
from verdryx_core.llm.progress import call_words
from verdryx_core.reporting.breakdown import breakdown_lines, compute_breakdown
from verdryx_core.runs import Baseline, EvalRun, Score

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
AGENT = "def answer(case):\n    return 'yes'\n"


def test_sandbox_runs_on_recorded_outputs_are_not_called_model_calls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # VERDRYX_SANDBOX=none stands for a machine without isolation (docs/workspaces-and-
    # execution.md); --verdryx-unsafe-exec runs the tests there all the same.
    monkeypatch.setenv("VERDRYX_SANDBOX", "none")
    case = {"id": "add", "prompt": "p", "grader": "exec", "output": ADD, "tests": ADD_TESTS}
    write_evalset(pytester.path, "code", "code", [case])
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-unsafe-exec")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["sandbox runs: 1/1*"])
    text = result.stdout.str()
    assert "model calls" not in text
    # The run's own line names no target, and the stub model it records.
    result.stdout.fnmatch_lines(["run *  model=stub"])


def test_a_target_that_answered_every_case_names_no_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent=AGENT)
    cases = [
        {"id": "says-yes", "prompt": "say yes", "expected": "yes"},
        {"id": "judged", "prompt": "say yes", "grader": "llm_judge", "rubric": "says yes"},
    ]
    write_evalset(pytester.path, "s", "s", cases)
    result = pytester.runpytest(
        "--no-verdryx-store", "--verdryx-target=agent:answer", "--verdryx-judge=stub"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["target calls and judge calls: 2/2*"])
    [line] = [line for line in result.stdout.lines if line.startswith("run ")]
    assert re.fullmatch(r"run \S+  target=agent:answer  judge=stub", line), line


def test_a_target_run_with_a_set_for_the_model_still_names_the_model() -> None:
    run = EvalRun(
        id="r",
        model="stub",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        target="agent:answer",
        set_targets={"a": "agent:answer", "b": None},
    )
    assert run.produced_by == "target=agent:answer  model=stub"
    assert run.produced_by.replace("  model=stub", "") == "target=agent:answer"
    alone = EvalRun(
        id="r",
        model="stub",
        started_at=run.started_at,
        target="agent:answer",
        set_targets={"a": "agent:answer"},
    )
    assert alone.produced_by == "target=agent:answer"


def test_call_words_name_each_kind_once_source_first() -> None:
    assert call_words(["sandbox runs", "target calls", "sandbox runs"]) == (
        "target calls and sandbox runs"
    )
    assert call_words(["judge calls", "model calls", "sandbox runs"]) == (
        "model calls, judge calls and sandbox runs"
    )
    assert call_words([]) == "calls"


def _score(set_id: str, case_id: str, value: float | None, fingerprint: str = "f") -> Score:
    return Score(
        case_id=case_id,
        eval_set_id=set_id,
        value=value,
        grader="exact",
        fingerprint=fingerprint,
        passed=None if value is None else value >= 0.5,
        unmeasured="no judge" if value is None else None,
    )


def test_a_group_not_compared_says_why() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    base_scores = [
        _score("kept", "a", 1.0),
        _score("kept", "b", 1.0),
        _score("now-unmeasured", "c", 1.0),
        _score("edited", "d", 1.0),
    ]
    base_run = EvalRun(id="base", model="stub", started_at=start, scores=tuple(base_scores))
    current = EvalRun(
        id="cur",
        model="stub",
        started_at=start + timedelta(minutes=1),
        scores=(
            _score("kept", "a", 1.0),
            _score("kept", "b", 0.0),
            _score("now-unmeasured", "c", None),
            _score("edited", "d", 1.0, fingerprint="g"),
            _score("brand-new", "e", 1.0),
        ),
    )
    result = compare_to_baseline([current], Baseline.from_run(base_run, id="b1", label="v1"))
    groups = {group.name: group for group in compute_breakdown(current, result).eval_sets}
    assert groups["kept"].delta == pytest.approx(-0.5) and groups["kept"].not_compared is None
    assert groups["now-unmeasured"].not_compared == "1 unmeasured"
    assert groups["edited"].not_compared == "1 edited since the baseline"
    assert groups["brand-new"].not_compared == "1 new since the baseline"
    text = "\n".join(breakdown_lines(compute_breakdown(current, result)))
    assert "not compared: 1 unmeasured" in text
    assert "no case matches" not in text


def test_power_words_never_print_the_two_numbers_alike() -> None:
    assert power_words(0.12, 0.05) == (
        "the smallest drop this run can see is 0.120, more than the 0.050 asked for"
    )
    # Rounded to three digits both would read 0.050.
    assert power_words(0.0504, 0.05) == (
        "the smallest drop this run can see is 0.0504, more than the 0.0500 asked for"
    )


@given(
    detect=st.floats(min_value=0.001, max_value=0.9),
    gap=st.floats(min_value=1e-5, max_value=0.5),
)
def test_power_words_print_the_larger_number_larger(detect: float, gap: float) -> None:
    mde, shown_detect = (
        float(x) for x in re.findall(r"\d+\.\d+", power_words(detect + gap, detect))
    )
    assert mde > shown_detect
