"""The graders added beside exact and regex (docs/graders.md): exact's options, contains,
icontains, json, numeric, f1 and multi-check cases. Each scorer's properties are checked by
hypothesis: a score in [0, 1], an exact answer 1.0, and the documented partial credit."""

from __future__ import annotations

import json
import math
import string
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.errors import CLI_FLAGS
from verdryx_core.evalsets.load import evalset_from_data, load_evalset
from verdryx_core.evaluation import CaseScorer
from verdryx_core.evaluation.sources import ModelSource
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.graders.checks import weighted_mean
from verdryx_core.graders.contains import contains_score
from verdryx_core.graders.exact import exact_score
from verdryx_core.graders.f1 import f1_score
from verdryx_core.graders.json_output import json_score
from verdryx_core.graders.numeric import numeric_score, read_number
from verdryx_core.llm import StubAdapter
from verdryx_core.runs import CheckResult, EvalRun, Score
from verdryx_core.store import Store

CONTEXT = GradeContext(eval_set_id="s")
GRADERS = build_graders()
_text = st.text(alphabet="aAbB \t\n.,!é\uff21\ufb01x1", max_size=14)
_options = st.fixed_dictionaries(
    {},
    optional={
        "ignore_case": st.booleans(),
        "normalize_whitespace": st.booleans(),
        "ignore_punctuation": st.booleans(),
        "unicode_normalize": st.booleans(),
    },
)


def grade(case: dict[str, Any], output: Any) -> Any:
    """Grade a case as loaded from a file (validated, its expectation normalised)."""
    data = {"id": "s", "cases": [{"id": "c", "prompt": "p", **case}]}
    built = evalset_from_data(data, "mem.evalset.json").cases[0]
    return GRADERS[built.grader].grade(built, output, CONTEXT)


def _reference_normalize(text: str, options: dict[str, bool]) -> str:
    # Written apart from the product: the documented order, one step a line.
    if options.get("unicode_normalize"):
        text = unicodedata.normalize("NFKC", text)
    if options.get("ignore_case"):
        text = text.casefold()
    if options.get("ignore_punctuation"):
        text = "".join(c for c in text if unicodedata.category(c)[0] != "P")
    if options.get("normalize_whitespace"):
        text = " ".join(text.split())
    return text


# -- exact with options, contains, icontains ---------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(output=_text, expected=_text, options=_options)
def test_exact_and_contains_follow_the_documented_normalisation(
    output: str, expected: str, options: dict[str, bool]
) -> None:
    a, b = _reference_normalize(output, options), _reference_normalize(expected, options)
    assert exact_score(output, expected, options) == (1.0 if a == b else 0.0)
    assert contains_score(output, expected, options) == (1.0 if b in a else 0.0)
    assert exact_score(expected, expected, options) == 1.0
    assert contains_score(expected, expected, options) == 1.0
    # Equal after normalising implies contained.
    assert exact_score(output, expected, options) <= contains_score(output, expected, options)


@pytest.mark.parametrize(
    ("case", "output", "value"),
    [
        ({"expected": "Paris"}, "paris", 0.0),
        ({"expected": "Paris", "ignore_case": True}, "PARIS", 1.0),
        ({"expected": "a b", "normalize_whitespace": True}, "  a \n\t b ", 1.0),
        ({"expected": "Hello world", "ignore_punctuation": True}, "Hello, world!", 1.0),
        ({"expected": "42", "unicode_normalize": True}, "\uff14\uff12", 1.0),  # full-width
        ({"expected": "office", "unicode_normalize": True}, "o\ufb03ce", 1.0),  # ffi ligature
        ({"grader": "contains", "expected": "refund"}, "We will refund you.", 1.0),
        ({"grader": "contains", "expected": "Refund"}, "We will refund you.", 0.0),
        ({"grader": "icontains", "expected": "REFUND"}, "We will refund you.", 1.0),
        ({"grader": "icontains", "expected": "refund"}, "We will not.", 0.0),
    ],
)
def test_text_worked_examples(case: dict[str, Any], output: str, value: float) -> None:
    assert grade(case, output).value == value


# -- f1 ----------------------------------------------------------------------------------------


def _squad_reference(text: str) -> list[str]:
    # SQuAD v1.1's evaluation script, restated.
    lowered = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return [t for t in lowered.split() if t not in {"a", "an", "the"}]


_words = st.lists(
    st.sampled_from(["the", "cat", "Cat.", "sat", "a", "mat", "on", "dog"]), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(output=_words, expected=_words)
def test_f1_is_squads_token_f1(output: list[str], expected: list[str]) -> None:
    out, gold = " ".join(output), " ".join(expected)
    value = f1_score(out, gold)
    assert 0.0 <= value <= 1.0
    p, g = _squad_reference(out), _squad_reference(gold)
    if not p or not g:
        assert value == (1.0 if p == g else 0.0)
    else:
        common = sum((Counter(p) & Counter(g)).values())
        reference = 0.0 if common == 0 else 2 * common / (len(p) + len(g))
        assert value == pytest.approx(reference)
    assert f1_score(gold, gold) == 1.0
    assert f1_score(out, gold) == pytest.approx(f1_score(gold, out))  # F1 is symmetric


def test_f1_worked_example() -> None:
    # predicted {cat, sat}, gold {cat, sat, on, mat}: P 1, R 0.5, F1 2/3.
    assert f1_score("The cat sat.", "a cat sat on the mat") == pytest.approx(2 / 3)


# -- numeric -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    expected=st.floats(-1e6, 1e6, allow_nan=False),
    delta=st.floats(-10, 10, allow_nan=False),
    tolerance=st.floats(0, 5),
    relative=st.floats(0, 0.5),
)
def test_numeric_passes_within_either_tolerance(
    expected: float, delta: float, tolerance: float, relative: float
) -> None:
    actual = expected + delta
    value = numeric_score(actual, expected, {"tolerance": tolerance, "relative": relative})
    assert value in (0.0, 1.0)
    assert numeric_score(expected, expected, {}) == 1.0
    gap = abs(actual - expected)
    slack = 1e-9 * max(1.0, abs(expected))
    if gap <= tolerance - slack or gap <= relative * abs(expected) - slack:
        assert value == 1.0
    if gap > tolerance + slack and gap > relative * abs(expected) + slack:
        assert value == 0.0


@settings(max_examples=200, deadline=None)
@given(number=st.floats(-1e9, 1e9, allow_nan=False), prefix=st.sampled_from(["", "The answer is "]))
def test_the_number_read_is_the_one_written(number: float, prefix: str) -> None:
    assert read_number(f"{prefix}{number!r}") == pytest.approx(number)


@pytest.mark.parametrize(
    ("output", "case", "value"),
    [
        ("It is 4.", {"expected": 4}, 1.0),
        ("1,234 apples", {"expected": "1234"}, 1.0),
        ("about 3.14", {"expected": 3.14159, "tolerance": 0.01}, 1.0),
        ("about 3.14", {"expected": 3.14159}, 0.0),
        ("105", {"expected": 100, "relative": 0.05}, 1.0),
        ("106", {"expected": 100, "relative": 0.05}, 0.0),
        ("no idea", {"expected": 1}, 0.0),
        ("0.30000000000000004", {"expected": 0.3}, 1.0),  # binary floating point, not a miss
    ],
)
def test_numeric_worked_examples(output: str, case: dict[str, Any], value: float) -> None:
    assert grade({"grader": "numeric", **case}, output).value == value


# -- json --------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(alphabet="ab", max_size=2)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(document=_json_values, other=_json_values)
def test_json_scores_are_the_fraction_of_conditions_met(document: Any, other: Any) -> None:
    text = json.dumps(document)
    assert json_score(text)[0] == 1.0  # valid JSON is all an unconditioned case asks
    assert json_score(text, expected=json.dumps(document))[0] == 1.0
    fields = {"x": other, "y": document}
    value, failed = json_score(json.dumps({"x": other, "y": 1}), fields=fields)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx((len(fields) - len(failed)) / len(fields))
    assert json_score("{not json", expected=text)[0] == 0.0


@pytest.mark.parametrize(
    ("output", "case", "value"),
    [
        ('{"a": {"b": [1, 2]}}', {"fields": {"a.b.1": 2}}, 1.0),
        ('{"a": {"b": [1, 2]}}', {"fields": {"a.b.1": 2, "a.c": 1}}, 0.5),
        ('```json\n{"ok": true}\n```', {"fields": {"ok": True}}, 1.0),
        ('{"ok": 1}', {"fields": {"ok": True}}, 0.0),  # a number is not a boolean
        ('{"n": "x"}', {"schema": {"type": "object", "required": ["n"]}}, 1.0),
        ('{"m": "x"}', {"schema": {"type": "object", "required": ["n"]}}, 0.0),
        ('{"m": "x"}', {"schema": {"required": ["n"]}, "fields": {"m": "x"}}, 0.5),
        ('{"m": "x"}', {"expected": {"m": "x"}}, 1.0),
        ('{"m": "y"}', {"expected": '{"m": {"one_of": ["x", "y"]}}'}, 1.0),
        ("plain text", {}, 0.0),
        ("NaN", {}, 0.0),
    ],
)
def test_json_worked_examples(output: str, case: dict[str, Any], value: float) -> None:
    assert grade({"grader": "json", **case}, output).value == pytest.approx(value)


# -- multi-check cases -------------------------------------------------------------------------


def _weights() -> st.SearchStrategy[list[tuple[float, bool]]]:
    return st.lists(st.tuples(st.floats(0.1, 5), st.booleans()), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(checks=_weights())
def test_a_multi_check_score_is_the_weighted_mean(checks: list[tuple[float, bool]]) -> None:
    case = {
        "checks": [
            {"grader": "exact", "expected": "yes" if passes else "no", "weight": weight}
            for weight, passes in checks
        ]
    }
    result = grade(case, "yes")
    reference = math.fsum(w for w, ok in checks if ok) / math.fsum(w for w, _ in checks)
    assert result.value == pytest.approx(reference)
    assert 0.0 <= result.value <= 1.0
    assert [c.value for c in result.checks] == [1.0 if ok else 0.0 for _, ok in checks]
    assert weighted_mean(list(result.checks)) == pytest.approx(reference)


def test_an_unmeasured_check_leaves_the_case_unmeasured() -> None:
    case = {
        "checks": [
            {"grader": "exact", "expected": "yes"},
            {"grader": "llm_judge", "rubric": "polite?"},
        ]
    }
    result = grade(case, "yes")  # no judge configured for this run
    assert result.value is None and result.unmeasured and "llm_judge" in result.unmeasured
    # The flag that would measure it, in the words of the core's own face (the CLI).
    assert "--judge MODEL" in result.unmeasured
    assert result.checks[0].value == 1.0 and result.checks[1].value is None


def test_a_multi_check_case_through_the_runner_with_a_judge(tmp_path: Path) -> None:
    path = tmp_path / "m.evalset.json"
    case = {
        "id": "m1",
        "prompt": "Answer politely with JSON.",
        "checks": [
            {"grader": "json", "fields": {"answer": 42}, "weight": 2},
            {"grader": "icontains", "expected": "PLEASE"},
            {"grader": "llm_judge", "rubric": "polite?"},
        ],
    }
    path.write_text(json.dumps({"id": "s", "cases": [case]}))
    loaded = load_evalset(path).cases[0]
    assert loaded.grader == "checks"
    model = StubAdapter(completion='{"answer": 42}', judge_value=0.5)
    evaluator = CaseScorer(
        graders=build_graders(judge=model), live=ModelSource(model), min_score=0.5, flags=CLI_FLAGS
    )
    score = evaluator.score(loaded, CONTEXT)
    # json 1.0 (w 2), icontains 0.0 (w 1), judge 0.5 (w 1): 2.5 / 4.
    assert score.value == pytest.approx(2.5 / 4)
    assert score.reason is not None and "#2 icontains 0.000" in score.reason
    assert score.grader == "checks"


def test_score_checks_round_trip_and_the_store_keeps_their_text(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    checks = (
        CheckResult(grader="exact", weight=2.0, value=1.0),
        CheckResult(grader="json", weight=1.0, value=0.0, reason="field 'a' is missing"),
    )
    score = Score(
        case_id="c",
        eval_set_id="s",
        value=2 / 3,
        grader="checks",
        checks=checks,
        reason="#1 exact 1.000 (w 2); #2 json 0.000 (w 1): field 'a' is missing",
    )
    assert Score.from_dict(json.loads(json.dumps(score.to_dict()))) == score
    run = EvalRun(id="r", model="stub", started_at=datetime.now(UTC), scores=(score,))
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
        loaded = store.load_run("r")
    assert loaded is not None
    # Stored structured (docs/store.md), their one-line text in `reason` as well.
    assert loaded.scores[0].checks == checks
    assert loaded.scores[0].reason == score.reason
