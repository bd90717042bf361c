"""Custom graders (docs/graders.md, "Custom graders"): registered in code or installed through
the `verdryx.graders` entry point group, usable by name in eval set files, held to the
built-in graders' score shape, errors and unmeasured rules."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin_support import stored_runs

from verdryx_core.cases import EvalCase
from verdryx_core.errors import CLI_FLAGS, EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import CaseScorer
from verdryx_core.graders import (
    Grade,
    GradeContext,
    GraderError,
    build_graders,
    default_min_score,
    is_grader,
    register_grader,
    unregister_grader,
)
from verdryx_core.graders.registry import refresh_entry_points

CONTEXT = GradeContext(eval_set_id="s")


class Length:
    """Scores the output's length against `options.max`: 1.0 within, else max / length."""

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Any:
        limit = (case.options.get("options") or {}).get("max")
        if limit is None:
            return Grade.unmeasured_because("no options.max")
        length = len(str(output))
        return 1.0 if length <= limit else limit / length


@pytest.fixture
def length_grader() -> Iterator[str]:
    register_grader("length", Length(), default_min_score=0.9)
    yield "length"
    unregister_grader("length")


def _write(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    path = tmp_path / "c.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": cases}))
    return path


def test_a_registered_grader_is_usable_by_name(tmp_path: Path, length_grader: str) -> None:
    cases = [
        {"id": "short", "prompt": "p", "grader": "length", "options": {"max": 10}, "output": "ok"},
        {"id": "long", "prompt": "p", "grader": "length", "options": {"max": 2}, "output": "four"},
        {"id": "none", "prompt": "p", "grader": "length", "output": "x"},
        {
            "id": "mixed",
            "prompt": "p",
            "checks": [
                {"grader": "length", "options": {"max": 2}},
                {"grader": "exact", "expected": "four"},
            ],
            "output": "four",
        },
    ]
    evalset = load_evalset(_write(tmp_path, cases))
    evaluator = CaseScorer(graders=build_graders(), min_score=0.5, flags=CLI_FLAGS)
    scores = [evaluator.score(case, CONTEXT) for case in evalset.cases]
    assert [s.value for s in scores] == [1.0, 0.5, None, 0.75]
    assert scores[2].unmeasured == "no options.max"
    assert default_min_score("length") == 0.9


def test_an_unregistered_name_is_a_load_error_listing_the_graders(
    tmp_path: Path, length_grader: str
) -> None:
    path = _write(tmp_path, [{"id": "a", "prompt": "p", "grader": "lenght", "output": "x"}])
    with pytest.raises(EvalSetError) as info:
        load_evalset(path)
    message = str(info.value)
    assert info.value.field == "grader" and "'lenght' is not a grader" in message
    # Other tests of this process may have registered graders of their own beside it.
    registered = message.partition("registered: ")[2].split(", ")
    assert "length" in registered


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (1.5, "1.5"),
        (float("nan"), "nan"),
        ("0.5", "'0.5'"),
        (Grade(value=None), "without a reason"),
        (None, "None"),
    ],
)
def test_a_bad_answer_is_an_error_naming_grader_and_case(answer: Any, words: str) -> None:
    class Bad:
        def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Any:
            return answer

    register_grader("bad", Bad())
    try:
        case = EvalCase(id="c1", prompt="p", grader="bad", output="x")
        with pytest.raises(GraderError) as info:
            build_graders()["bad"].grade(case, "x", CONTEXT)
        message = str(info.value)
        assert "'bad'" in message and "'c1'" in message and words in message
    finally:
        unregister_grader("bad")


def test_registration_rules() -> None:
    with pytest.raises(GraderError, match="built-in"):
        register_grader("exact", Length())
    with pytest.raises(GraderError, match="not usable"):
        register_grader("no spaces", Length())
    with pytest.raises(GraderError, match="no grade"):
        register_grader("thing", object())
    register_grader("twice", Length)  # a class: built on first use
    try:
        with pytest.raises(GraderError, match="already registered"):
            register_grader("twice", Length())
        register_grader("twice", Length(), replace=True)
        assert is_grader("twice")
    finally:
        unregister_grader("twice")
    assert not is_grader("twice")


def test_default_min_score_of_the_built_ins() -> None:
    assert default_min_score("tool_trace") == 1.0
    for kind in ("exact", "regex", "contains", "json", "numeric", "f1", "llm_judge", "checks"):
        assert default_min_score(kind) is None
    assert default_min_score("not-a-grader") is None


@pytest.fixture
def installed_grader(tmp_path: Path) -> Iterator[str]:
    """A real installed distribution on sys.path declaring a `verdryx.graders` entry point:
    the metadata lookup is importlib's own."""
    site = tmp_path / "site"
    package = site / "shouting_grader.py"
    site.mkdir()
    package.write_text(
        textwrap.dedent(
            """
            from verdryx_core.graders import Grade

            class Shouting:
                default_min_score = 1.0

                def grade(self, case, output, context):
                    text = str(output)
                    return Grade(value=1.0 if text.isupper() else 0.0, reason=None)
            """
        )
    )
    dist = site / "shouting_grader-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shouting-grader\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[verdryx.graders]\nshouting = shouting_grader:Shouting\n"
    )
    sys.path.insert(0, str(site))
    refresh_entry_points()
    yield "shouting"
    sys.path.remove(str(site))
    sys.modules.pop("shouting_grader", None)
    refresh_entry_points()


def test_an_installed_entry_point_grader_loads_lazily(
    tmp_path: Path, installed_grader: str
) -> None:
    assert "shouting_grader" not in sys.modules  # listed, not imported
    cases = [
        {"id": "loud", "prompt": "p", "grader": "shouting", "output": "HELLO"},
        {"id": "quiet", "prompt": "p", "grader": "shouting", "output": "hello"},
    ]
    evalset = load_evalset(_write(tmp_path, cases))
    # Loading a file that names it imports it: a grader may check its cases at load
    # (docs/graders.md, "Graders from add-ons").
    assert "shouting_grader" in sys.modules
    graders = build_graders()
    assert [graders["shouting"].grade(c, c.output, CONTEXT).value for c in evalset.cases] == [
        1.0,
        0.0,
    ]
    assert default_min_score("shouting") == 1.0


CONFTEST = """
from verdryx_core.graders import Grade, register_grader


class Vowels:
    def grade(self, case, output, context):
        text = str(output)
        return Grade(value=sum(c in "aeiou" for c in text) / max(len(text), 1))


register_grader("vowels", Vowels(), replace=True)
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_conftest_registered_grader_in_a_pytest_session(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    header = {"id": "vow", "defaults": {"grader": "vowels", "min_score": 0.5}}
    cases = [
        {"id": "all", "prompt": "p", "output": "aeiou"},
        {"id": "half", "prompt": "p", "output": "abab"},
        {"id": "none", "prompt": "p", "output": "xyz"},
    ]
    lines = [json.dumps(item) for item in [header, *cases]]
    pytester.path.joinpath("v.evalset.jsonl").write_text("\n".join(lines) + "\n")
    db = pytester.path / "v.db"
    try:
        result = pytester.runpytest(*workers, f"--verdryx-db={db}", "-p", "no:cacheprovider")
    finally:
        unregister_grader("vowels")
    result.assert_outcomes(passed=2, failed=1)
    run = stored_runs(db)[0]
    assert {s.case_id: s.value for s in run.scores} == {"all": 1.0, "half": 0.5, "none": 0.0}
