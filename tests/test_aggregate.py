"""Per-case aggregation of repeated samples: mean, all, any and the unbiased pass@k
estimator, against independent implementations (docs/workspaces-and-execution.md,
"Aggregating repeats: pass@k")."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import comb as scipy_comb

from verdryx_core.errors import EvalSetError, UsageError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import EvalSettings, evaluate
from verdryx_core.evaluation.aggregate import aggregate, pass_at_k
from verdryx_core.targets import TargetCase


def numpy_pass_at_k(n: int, c: int, k: int) -> float:
    """HumanEval's own estimator, in its numerically stable product form."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@st.composite
def n_c_k(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 200))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@settings(max_examples=200, deadline=None)
@given(n_c_k())
def test_pass_at_k_is_the_unbiased_estimator(drawn: tuple[int, int, int]) -> None:
    n, c, k = drawn
    value = pass_at_k(n, c, k)
    assert value == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)
    assert value == pytest.approx(numpy_pass_at_k(n, c, k), abs=1e-9)
    assert value == pytest.approx(
        1 - scipy_comb(n - c, k, exact=True) / scipy_comb(n, k, exact=True)
    )
    passed = [True] * c + [False] * (n - c)
    assert aggregate([float(p) for p in passed], passed, f"pass@{k}") == value


def test_pass_at_k_matches_drawing_k_samples() -> None:
    # A simulation: draw k of the n samples without replacement, many times.
    rng = np.random.default_rng(7)
    n, c, k = 10, 3, 4
    outcomes = np.array([1] * c + [0] * (n - c))
    draws = np.array([rng.choice(outcomes, size=k, replace=False).max() for _ in range(20_000)])
    assert pass_at_k(n, c, k) == pytest.approx(draws.mean(), abs=0.015)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=20), st.floats(0, 1))
def test_mean_all_and_any(values: list[float], bar: float) -> None:
    passed = [value >= bar for value in values]
    assert aggregate(values, passed, None) == pytest.approx(float(np.mean(values)))
    assert aggregate(values, passed, "mean") == aggregate(values, passed, None)
    assert aggregate(values, passed, "all") == (1.0 if all(passed) else 0.0)
    assert aggregate(values, passed, "any") == (1.0 if any(passed) else 0.0)


def test_k_above_the_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="needs at least 3 samples"):
        aggregate([1.0, 0.0], [True, False], "pass@3")


#: Which samples of each case answer right, by repeat (5 repeats).
PATTERNS = {"always": "11111", "twice": "01010", "once": "00001", "never": "00000"}


def answer(case: TargetCase) -> str:
    return "yes" if PATTERNS[case.id][case.repeat] == "1" else "no"


def write_set(folder: Path, rule: str, **defaults: Any) -> Path:
    path = folder / f"agg-{rule.replace('@', '')}.evalset.json"
    cases = [{"id": key, "prompt": key, "expected": "yes"} for key in PATTERNS]
    document = {"id": f"agg-{rule}", "defaults": {"aggregate": rule, **defaults}, "cases": cases}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize("rule", ["mean", "all", "any", "pass@1", "pass@2", "pass@5"])
def test_a_case_scores_its_aggregate_over_its_samples(tmp_path: Path, rule: str) -> None:
    run = evaluate([write_set(tmp_path, rule)], EvalSettings(repeat=5, cache="off"), target=answer)
    for score in run.scores:
        marks = [mark == "1" for mark in PATTERNS[score.case_id]]
        c = sum(marks)
        by_rule = {"mean": c / 5, "all": float(c == 5), "any": float(c > 0)}
        expected = (
            by_rule[rule] if rule in by_rule else numpy_pass_at_k(5, c, int(rule.split("@")[1]))
        )
        assert score.value == pytest.approx(expected), score.case_id
        assert score.samples == tuple(float(m) for m in marks)
        assert score.passed == (score.value >= score.bar)


def test_pass_at_k_needs_k_repeats_at_start(tmp_path: Path) -> None:
    path = write_set(tmp_path, "pass@5")
    with pytest.raises(UsageError) as caught:
        evaluate([path], EvalSettings(repeat=2, cache="off"), target=answer)
    text = str(caught.value)
    assert str(path) in text and "case always" in text and "field 'aggregate'" in text
    assert "EvalSettings.repeat 5" in text  # the Python API names its own field


def test_a_bad_aggregate_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match=r"field 'defaults\.aggregate'"):
        load_evalset(write_set(tmp_path, "pass@0"))
    with pytest.raises(EvalSetError, match="aggregate"):
        load_evalset(write_set(tmp_path, "median"))


def test_the_plugin_checks_k_at_start_and_shows_the_rule(pytester: pytest.Pytester) -> None:
    write_set(pytester.path, "pass@2")
    pytester.makeconftest(
        "PATTERNS = " + repr(PATTERNS) + "\n"
        "def answer(case):\n"
        "    return 'yes' if PATTERNS[case.id][case.repeat] == '1' else 'no'\n"
        "def pytest_verdryx_target(config):\n"
        "    return answer\n"
    )
    refused = pytester.runpytest("--verdryx-repeat=1", "-p", "no:cacheprovider")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*agg-pass2.evalset.json: case always: field 'aggregate': aggregate 'pass@2' needs at "
         "least 2 samples*--verdryx-repeat 2 or more*"]
    )  # fmt: skip
    ran = pytester.runpytest("--verdryx-repeat=5", "--no-verdryx-store", "-p", "no:cacheprovider")
    ran.stdout.fnmatch_lines(["*aggregate over 5 sample(s) per case: pass@2 4 case(s)*"])
    # pass@2 of 2 in 5 is 0.7, above the bar; 1 in 5 is 0.4, below it.
    ran.assert_outcomes(passed=2, failed=2)
    # Under auto repeats a pass@K case is given its K samples whatever the budget.
    auto = pytester.runpytest(
        "--verdryx-repeat=auto", "--verdryx-max-samples=4", "--no-verdryx-store",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    auto.stdout.fnmatch_lines(["*samples: 2 x 4 cases*"])
    # Samples 0 and 1: "always" 2 of 2 and "twice" 1 of 2 give pass@2 = 1.0; the others 0.
    auto.assert_outcomes(passed=2, failed=2)


def test_under_xdist_a_case_short_of_samples_is_unmeasured(pytester: pytest.Pytester) -> None:
    # A worker cannot stop the session at start without crashing: the case says why instead.
    write_set(pytester.path, "pass@3")
    result = pytester.runpytest("-n", "2", "--no-verdryx-store", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*agg-pass@3::always: aggregate 'pass@3' needs at least 3 samples*"]
    )
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(skipped=4)
    # The workers' summary note reaches the controller's summary, once for both.
    note = "aggregate over 1 sample(s) per case: pass@3 4 case(s)"
    assert result.stdout.str().count(note) == 1, result.stdout.str()
