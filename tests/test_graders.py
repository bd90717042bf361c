"""The model-free graders: exact, regex, outcome_tag and tool_trace.

Properties are checked against independent references: stdlib `re` for the regex grader, and
a brute-force subsequence search for the LCS of tool traces.
"""

from __future__ import annotations

import itertools
import re
import time
import warnings
from collections.abc import Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verdryx_core.cases import DEFAULT_OUTCOME_SCORES, EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.exact import ExactGrader
from verdryx_core.graders.outcome_tag import OutcomeTagGrader
from verdryx_core.graders.regex import RegexGrader, compile_pattern
from verdryx_core.graders.tool_trace import ToolTraceGrader, lcs_length, trace_score

CONTEXT = GradeContext(eval_set_id="s")

_text = st.text(alphabet="abAB \t\n.x1", max_size=12)


def _in_unit_interval(grade: Grade) -> bool:
    return grade.value is not None and 0.0 <= grade.value <= 1.0


# -- exact -----------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(expected=_text, output=_text)
def test_exact_is_one_iff_equal(expected: str, output: str) -> None:
    grade = ExactGrader().grade(EvalCase(id="c", prompt="p", expected=expected), output, CONTEXT)
    assert _in_unit_interval(grade)
    assert (grade.value == 1.0) == (output == expected)
    assert grade.value in (0.0, 1.0)


@pytest.mark.parametrize("output", ["hi ", " hi", "Hi", "hi\n"])
def test_exact_counts_whitespace_and_case(output: str) -> None:
    case = EvalCase(id="c", prompt="p", expected="hi")
    assert ExactGrader().grade(case, output, CONTEXT).value == 0.0
    assert ExactGrader().grade(case, "hi", CONTEXT).value == 1.0


def test_exact_without_expected_is_an_error_not_a_match() -> None:
    # A None output must not "equal" a missing expected and score 1.0.
    with pytest.raises(ValueError, match=r"requires case\.expected.*'lonely'"):
        ExactGrader().grade(EvalCase(id="lonely", prompt="p"), None, CONTEXT)


# -- regex -----------------------------------------------------------------------------------

_atoms = st.sampled_from(["a", "b", "A", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", r"\.", "x", " "])
_quantifiers = st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?", "{2}"])


def _pieces(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, _quantifiers).map("".join),
        inner.map(lambda p: f"({p})"),
        st.tuples(inner, inner).map(lambda pair: f"{pair[0]}|{pair[1]}"),
        st.lists(inner, min_size=2, max_size=3).map("".join),
    )


_patterns = st.tuples(
    st.sampled_from(["", "", "^", "(?i)", r"\b"]),
    st.recursive(_atoms, _pieces, max_leaves=6),
    st.sampled_from(["", "", "$", r"\b"]),
).map("".join)


@settings(max_examples=200, deadline=None)
@given(pattern=_patterns, output=st.text(alphabet="abAB1 .x\n_\u212a", max_size=10))
def test_regex_agrees_with_stdlib_re_search(pattern: str, output: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = re.search(pattern, output) is not None
        except re.error:
            assume(False)
    case = EvalCase(id="c", prompt="p", grader="regex", expected=pattern)
    grade = RegexGrader().grade(case, output, CONTEXT)
    assert _in_unit_interval(grade)
    assert grade.value == (1.0 if expected else 0.0)


@pytest.mark.parametrize(
    ("pattern", "output", "value"),
    [
        ("b", "abc", 1.0),  # search, not match
        ("^b", "abc", 0.0),
        ("abc$", "abc\n", 1.0),  # re's $ matches before a trailing newline
        ("A", "a", 0.0),  # no flags: case-sensitive
        ("^b", "a\nb", 0.0),  # no MULTILINE
        ("a.b", "a\nb", 0.0),  # no DOTALL
        ("(?i)within 30 days", "Refunds WITHIN 30 DAYS", 1.0),
    ],
)
def test_regex_reads_patterns_as_re_search(pattern: str, output: str, value: float) -> None:
    case = EvalCase(id="c", prompt="p", grader="regex", expected=pattern)
    assert RegexGrader().grade(case, output, CONTEXT).value == value


def test_a_catastrophic_pattern_is_the_outputs_failure_within_the_timeout() -> None:
    case = EvalCase(id="slow", prompt="p", grader="regex", expected="(x+x+)+y")
    grader = RegexGrader(timeout_s=0.2)
    started = time.perf_counter()
    grade = grader.grade(case, "x" * 5000, CONTEXT)
    elapsed = time.perf_counter() - started
    # The output ran the search out of time: it scores 0 (docs/outcomes.md), never unmeasured.
    assert grade.value == 0.0 and grade.unmeasured is None
    assert grade.failed_by_output is not None and "0.2s" in grade.failed_by_output
    # Without the timeout this search runs for far longer than any machine's lifetime; the
    # wide bound only tells a stopped search from an unstopped one, even on a loaded machine.
    assert elapsed < 20.0, f"the search took {elapsed:.2f}s with a 0.2s timeout"


@pytest.mark.parametrize("pattern", ["(ab", r"\p{L}", "[[:alpha:]]", r"a\K"])
def test_an_invalid_pattern_is_a_value_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="not a valid regex"):
        compile_pattern(pattern)
    case = EvalCase(id="c", prompt="p", grader="regex", expected=pattern)
    with pytest.raises(ValueError, match="not a valid regex"):
        RegexGrader().grade(case, "x", CONTEXT)


def test_regex_without_expected_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"requires case\.expected"):
        RegexGrader().grade(EvalCase(id="c", prompt="p", grader="regex"), "x", CONTEXT)


# -- outcome_tag -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "value"),
    [("case_resolved", 1.0), ("escalated", 0.5), ("abandoned", 0.0), ("  escalated\n", 0.5)],
)
def test_outcome_tag_default_table(tag: str, value: float) -> None:
    case = EvalCase(id="c", prompt=tag, grader="outcome_tag")
    grade = OutcomeTagGrader().grade(case, tag, CONTEXT)
    assert grade.value == value
    assert grade.reason is None


def test_an_unknown_tag_scores_zero_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    case = EvalCase(id="conv-9", prompt="refunded", grader="outcome_tag")
    grade = OutcomeTagGrader().grade(case, "refunded", CONTEXT)
    assert grade.value == 0.0
    assert grade.reason is not None and "'refunded'" in grade.reason
    assert "conv-9" in caplog.text


def test_an_override_replaces_the_whole_table_and_is_copied() -> None:
    table = {"solved": 1.0}
    grader = OutcomeTagGrader(table)
    case = EvalCase(id="c", prompt="x", grader="outcome_tag")
    assert grader.grade(case, "solved", CONTEXT).value == 1.0
    assert grader.grade(case, "escalated", CONTEXT).value == 0.0  # not from the defaults
    table["solved"] = 0.0
    assert grader.grade(case, "solved", CONTEXT).value == 1.0
    OutcomeTagGrader().mapping["case_resolved"] = 0.0
    assert DEFAULT_OUTCOME_SCORES["case_resolved"] == 1.0


def test_the_unknown_tag_default_is_overridable() -> None:
    case = EvalCase(id="c", prompt="x", grader="outcome_tag")
    assert OutcomeTagGrader(default=0.25).grade(case, "mystery", CONTEXT).value == 0.25


@pytest.mark.parametrize(
    "table", [{"solved": 2.0}, {"solved": -0.1}, {"solved": float("nan")}, {"solved": "1"}]
)
def test_a_table_outside_the_unit_interval_is_refused(table: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"'solved'.*\[0, 1\]"):
        OutcomeTagGrader(table)  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    table=st.dictionaries(st.text(max_size=5), st.floats(0.0, 1.0), max_size=4),
    tag=st.text(max_size=6),
)
def test_outcome_tag_scores_are_in_the_unit_interval(table: dict[str, float], tag: str) -> None:
    case = EvalCase(id="c", prompt=tag, grader="outcome_tag")
    grade = OutcomeTagGrader(table).grade(case, tag, CONTEXT)
    assert _in_unit_interval(grade)
    assert grade.value == table.get(tag.strip(), 0.0)


# -- tool_trace ------------------------------------------------------------------------------


def brute_force_lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """The longest subsequence of the shorter list that is also a subsequence of the other,
    found by trying every subsequence from the longest down (no dynamic programming)."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)

    def is_subsequence(candidate: tuple[str, ...], of: Sequence[str]) -> bool:
        remaining = iter(of)
        return all(any(item == other for other in remaining) for item in candidate)

    for size in range(len(short), 0, -1):
        for indices in itertools.combinations(range(len(short)), size):
            if is_subsequence(tuple(short[i] for i in indices), long_):
                return size
    return 0


_names = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=7)


@settings(max_examples=200, deadline=None)
@given(a=_names, b=_names)
def test_lcs_matches_a_brute_force_reference(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == brute_force_lcs(a, b)


@settings(max_examples=300, deadline=None)
@given(a=_names, b=_names)
def test_lcs_and_trace_score_properties(a: list[str], b: list[str]) -> None:
    length = lcs_length(a, b)
    assert length == lcs_length(b, a)
    assert 0 <= length <= min(len(a), len(b))
    score = trace_score(a, b)
    assert score == trace_score(b, a)
    assert 0.0 <= score <= 1.0
    assert (score == 1.0) == (a == b)
    if a != b:
        assert score == length / max(len(a), len(b))


@pytest.mark.parametrize(
    ("expected", "actual", "value"),
    [
        (["a", "b"], ["b", "a"], 0.5),
        (["a", "b"], ["a"], 0.5),
        (["a"], ["a", "b"], 0.5),
        ([], ["a"], 0.0),
        (["a"], ["b"], 0.0),
        (["a"], [], 0.0),
        ([], [], 1.0),
        (["a", "b", "c"], ["a", "x", "c"], 2 / 3),
    ],
)
def test_tool_trace_worked_examples(expected: list[str], actual: list[str], value: float) -> None:
    # docs/graders.md, "Tool traces": `ordered` scores LCS(A, E) / max(|A|, |E|).
    case = EvalCase(
        id="t",
        prompt="p",
        grader="tool_trace",
        tools=({"name": "a"},),
        expected_tools=tuple(expected),
    )
    grade = ToolTraceGrader().grade(case, actual, CONTEXT)
    assert grade.value == pytest.approx(value, abs=1e-12)
    assert (grade.reason is None) == (value == 1.0)
    assert grade.tokens == 0 and grade.cost_usd == 0.0


def test_tool_trace_with_no_output_is_no_calls_and_text_is_the_outputs_failure() -> None:
    case = EvalCase(
        id="t", prompt="p", grader="tool_trace", tools=({"name": "a"},), expected_tools=()
    )
    assert ToolTraceGrader().grade(case, None, CONTEXT).value == 1.0
    grade = ToolTraceGrader().grade(case, "lookup_order", CONTEXT)
    assert grade.value == 0.0 and grade.failed_by_output is not None
