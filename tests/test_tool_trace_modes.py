"""Tool traces with arguments and match modes (docs/graders.md, `tool_trace`).

The scorer's properties are checked by hypothesis against brute-force references (every
one-to-one pairing, every subsequence); a BFCL-shaped function-calling sample is converted to
a JSONL eval set and graded through the runner, each score checked against a computation
made directly on the benchmark's own ground-truth shape.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cases import EvalCase, ToolCall
from verdryx_core.errors import CLI_FLAGS
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import CaseScorer
from verdryx_core.evaluation.sources import ModelSource
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.graders.tool_trace import (
    ToolTraceGrader,
    arguments_match,
    calls_score,
    matching_size,
    trace_score,
)

CONTEXT = GradeContext(eval_set_id="s")
MODES = ("ordered", "unordered", "subset", "superset")

_names = st.lists(st.sampled_from("abcd"), max_size=6)
_calls = st.lists(
    st.builds(
        lambda name, x: ToolCall(name=name, arguments={"x": x}),
        st.sampled_from("ab"),
        st.integers(0, 2),
    ),
    max_size=5,
)


def _brute_matching(a: Sequence[Any], b: Sequence[Any], match: Any) -> int:
    """The largest one-to-one pairing, by trying every injection of the shorter list."""
    short, long_, flip = (a, b, False) if len(a) <= len(b) else (b, a, True)
    best = 0
    for chosen in itertools.permutations(range(len(long_)), len(short)):
        pairs = [
            (long_[j], short[i]) if flip else (short[i], long_[j]) for i, j in enumerate(chosen)
        ]
        best = max(best, sum(1 for x, y in pairs if match(x, y)))
    return best


def _reference(actual: Sequence[str], expected: Sequence[str], mode: str) -> float:
    if not actual and not expected:
        return 1.0
    if mode == "ordered":
        if list(actual) == list(expected):
            return 1.0
        longest = max(
            (
                size
                for size in range(min(len(actual), len(expected)), -1, -1)
                for sub in itertools.combinations(actual, size)
                if _is_subsequence(sub, expected)
            ),
            default=0,
        )
        return longest / max(len(actual), len(expected))
    matched = _brute_matching(actual, expected, lambda x, y: x == y)
    denominator = {
        "unordered": max(len(actual), len(expected)),
        "superset": len(expected),
        "subset": len(actual),
    }[mode]
    return 1.0 if denominator == 0 else matched / denominator


def _is_subsequence(sub: Sequence[str], seq: Sequence[str]) -> bool:
    it = iter(seq)
    return all(item in it for item in sub)


@settings(max_examples=300, deadline=None)
@given(actual=_names, expected=_names, mode=st.sampled_from(MODES))
def test_name_traces_score_as_the_brute_force_reference(
    actual: list[str], expected: list[str], mode: str
) -> None:
    value = trace_score(actual, expected, mode)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(_reference(actual, expected, mode))
    calls = calls_score(
        [ToolCall(name=n) for n in actual], [ToolCall(name=n) for n in expected], tool_match=mode
    )
    assert calls == pytest.approx(value)


@settings(max_examples=200, deadline=None)
@given(actual=_names, expected=_names)
def test_symmetry_where_it_holds(actual: list[str], expected: list[str]) -> None:
    # ordered and unordered treat made and expected alike; subset and superset mirror.
    for mode in ("ordered", "unordered"):
        assert trace_score(actual, expected, mode) == trace_score(expected, actual, mode)
    assert trace_score(actual, expected, "subset") == trace_score(expected, actual, "superset")


@settings(max_examples=200, deadline=None)
@given(
    calls=_calls, mode=st.sampled_from(MODES), argument_match=st.sampled_from(["exact", "subset"])
)
def test_an_exact_answer_is_one_and_a_reversed_one_is_one_unordered(
    calls: list[ToolCall], mode: str, argument_match: str
) -> None:
    assert calls_score(calls, calls, tool_match=mode, argument_match=argument_match) == 1.0
    reversed_ = list(reversed(calls))
    assert calls_score(reversed_, calls, tool_match="unordered") == 1.0
    assert calls_score(reversed_, calls, tool_match="subset") == 1.0
    assert calls_score(reversed_, calls, tool_match="superset") == 1.0


@settings(max_examples=200, deadline=None)
@given(actual=_calls, expected=_calls, mode=st.sampled_from(MODES))
def test_calls_scores_are_bounded_and_match_the_brute_force_matching(
    actual: list[ToolCall], expected: list[ToolCall], mode: str
) -> None:
    value = calls_score(actual, expected, tool_match=mode)
    assert 0.0 <= value <= 1.0

    def match(made: ToolCall, wanted: ToolCall) -> bool:
        return made.name == wanted.name and made.arguments == wanted.arguments

    assert matching_size(actual, expected, match) == _brute_matching(actual, expected, match)


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 5),
    edges=st.sets(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=12),
)
def test_the_matching_is_maximum_on_arbitrary_compatibility(
    size: int, edges: set[tuple[int, int]]
) -> None:
    # With one_of and subset arguments a call may match several expected ones: a greedy
    # pairing would undercount; the matching must agree with trying every pairing.
    a, b = list(range(size)), list(range(5))

    def match(x: int, y: int) -> bool:
        return (x, y) in edges

    assert matching_size(a, b, match) == _brute_matching(a, b, match)


@pytest.mark.parametrize(
    ("expected", "actual", "mode", "value"),
    [
        (["a", "b"], ["b", "a"], "ordered", 0.5),
        (["a", "b"], ["b", "a"], "unordered", 1.0),
        (["a", "b"], ["a", "b", "c"], "superset", 1.0),
        (["a", "b"], ["a", "b", "c"], "subset", 2 / 3),
        (["a", "b"], ["a"], "subset", 1.0),
        (["a", "b"], ["a"], "superset", 0.5),
        (["a", "a"], ["a"], "unordered", 0.5),
        ([], [], "unordered", 1.0),
        ([], ["a"], "superset", 1.0),
        ([], ["a"], "subset", 0.0),
    ],
)
def test_worked_examples_of_each_mode(
    expected: list[str], actual: list[str], mode: str, value: float
) -> None:
    assert trace_score(actual, expected, mode) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expected", "actual", "mode", "matches"),
    [
        ({"city": "Paris"}, {"city": "Paris"}, "exact", True),
        ({"city": "Paris"}, {"city": "Paris", "unit": "C"}, "exact", False),
        ({"city": "Paris"}, {"city": "Paris", "unit": "C"}, "subset", True),
        ({"city": {"one_of": ["Paris", "paris"]}}, {"city": "paris"}, "exact", True),
        ({"city": {"one_of": ["Paris"]}}, {"city": "Lyon"}, "exact", False),
        ({"n": 1}, {"n": 1.0}, "exact", True),
        ({"n": 1}, {"n": True}, "exact", False),  # a boolean is not a number
        ({"n": {"one_of": [1], "optional": True}}, {}, "exact", True),
        ({"n": {"one_of": [1], "optional": True}}, {"n": 2}, "exact", False),
        ({"a": {"b": {"one_of": [1, 2]}}}, {"a": {"b": 2}}, "exact", True),
        (None, {"anything": 1}, "exact", True),
        ({"x": 1}, None, "subset", False),
    ],
)
def test_arguments_match(
    expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None, mode: str, matches: bool
) -> None:
    assert arguments_match(expected, actual, mode) is matches


def _case(**fields: Any) -> EvalCase:
    return EvalCase.from_dict({"id": "c", "prompt": "p", "grader": "tool_trace", **fields})


def test_several_acceptable_lists_take_the_best_score() -> None:
    case = _case(
        expected_tool_calls_any=[
            [{"name": "search", "arguments": {"q": "x"}}],
            [{"name": "lookup"}, {"name": "search"}],
        ]
    )
    grade = ToolTraceGrader().grade(case, [{"name": "lookup", "arguments": {}}], CONTEXT)
    assert grade.value == 0.5 and grade.reason and "best of 2: #2" in grade.reason
    exact = [{"name": "search", "arguments": {"q": "x"}}]
    assert ToolTraceGrader().grade(case, exact, CONTEXT).value == 1.0


def test_a_name_only_trace_against_expected_arguments_is_the_outputs_failure() -> None:
    # The agent's trace lacks what the case grades: 0, never unmeasured (docs/outcomes.md).
    case = _case(expected_tool_calls=[{"name": "search", "arguments": {"q": "x"}}])
    grade = ToolTraceGrader().grade(case, ["search"], CONTEXT)
    assert grade.value == 0.0 and grade.unmeasured is None
    assert grade.failed_by_output and "arguments" in grade.failed_by_output


def test_a_recorded_trace_is_names_or_call_objects() -> None:
    case = _case(expected_tools=["a", "b"], tool_match="unordered")
    assert ToolTraceGrader().grade(case, ["b", "a"], CONTEXT).value == 1.0
    objects = [{"name": "b", "arguments": {"k": 1}}, ToolCall(name="a", arguments={})]
    assert ToolTraceGrader().grade(case, objects, CONTEXT).value == 1.0


# -- the done-test: a BFCL-shaped sample, converted to JSONL, graded unordered ----------------

# BFCL's shape: functions with OpenAI-style `parameters`, and a ground truth listing, per
# expected call, each argument's acceptable values ("" meaning the argument may be left out).
BFCL_FUNCTIONS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
    "convert_currency": {
        "name": "convert_currency",
        "description": "Convert an amount between currencies.",
        "parameters": {
            "type": "dict",
            "properties": {
                "amount": {"type": "float"},
                "from_currency": {"type": "string"},
                "to_currency": {"type": "string"},
            },
            "required": ["amount", "from_currency", "to_currency"],
        },
    },
}

BFCL_SAMPLE: list[dict[str, Any]] = [
    {
        "id": "parallel_0",
        "question": "Weather in Paris and in Tokyo, in celsius.",
        "functions": ["get_weather"],
        "ground_truth": [
            {"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["celsius", ""]}},
            {"get_weather": {"city": ["Tokyo"], "unit": ["celsius", ""]}},
        ],
        # Both calls right, in the other order, one leaving the optional unit out.
        "model": [
            {"get_weather": {"city": "Tokyo", "unit": "celsius"}},
            {"get_weather": {"city": "Paris, France"}},
        ],
    },
    {
        "id": "parallel_1",
        "question": "Weather in Oslo, Lima and Cairo.",
        "functions": ["get_weather"],
        "ground_truth": [
            {"get_weather": {"city": ["Oslo"], "unit": ["", "celsius"]}},
            {"get_weather": {"city": ["Lima"], "unit": ["", "celsius"]}},
            {"get_weather": {"city": ["Cairo"], "unit": ["", "celsius"]}},
        ],
        # One city wrong, one call missing.
        "model": [
            {"get_weather": {"city": "Lima"}},
            {"get_weather": {"city": "Oslo, Norway"}},
        ],
    },
    {
        "id": "parallel_multiple_0",
        "question": "Convert 100 USD to EUR and tell me the weather in Rome.",
        "functions": ["get_weather", "convert_currency"],
        "ground_truth": [
            {
                "convert_currency": {
                    "amount": [100, 100.0],
                    "from_currency": ["USD"],
                    "to_currency": ["EUR"],
                }
            },
            {"get_weather": {"city": ["Rome", "Rome, Italy"], "unit": ["", "celsius"]}},
        ],
        # Both right; one extra call nobody asked for.
        "model": [
            {"get_weather": {"city": "Rome"}},
            {"convert_currency": {"amount": 100.0, "from_currency": "USD", "to_currency": "EUR"}},
            {"get_weather": {"city": "Milan"}},
        ],
    },
    {
        "id": "parallel_multiple_1",
        "question": "Convert 5 GBP to JPY and 7 GBP to USD.",
        "functions": ["convert_currency"],
        "ground_truth": [
            {"convert_currency": {"amount": [5], "from_currency": ["GBP"], "to_currency": ["JPY"]}},
            {"convert_currency": {"amount": [7], "from_currency": ["GBP"], "to_currency": ["USD"]}},
        ],
        # An argument the function does not take makes that call wrong.
        "model": [
            {"convert_currency": {"amount": 7, "from_currency": "GBP", "to_currency": "USD"}},
            {
                "convert_currency": {
                    "amount": 5,
                    "from_currency": "GBP",
                    "to_currency": "JPY",
                    "rounding": 2,
                }
            },
        ],
    },
    {
        "id": "simple_0",
        "question": "Weather in Berlin in fahrenheit.",
        "functions": ["get_weather"],
        "ground_truth": [{"get_weather": {"city": ["Berlin"], "unit": ["fahrenheit"]}}],
        # The wrong unit.
        "model": [{"get_weather": {"city": "Berlin", "unit": "celsius"}}],
    },
    {
        "id": "irrelevance_0",
        "question": "Tell me a joke.",
        "functions": ["get_weather"],
        "ground_truth": [],
        "model": [],
    },
]


def _convert(sample: Sequence[Mapping[str, Any]]) -> str:
    """BFCL entries as a JSONL eval set: OpenAI-style `parameters` become `input_schema`,
    acceptable-value lists become `one_of` ("" marks an optional argument)."""

    def tool(name: str) -> dict[str, Any]:
        spec = BFCL_FUNCTIONS[name]
        schema = dict(spec["parameters"], type="object")
        return {"name": name, "description": spec["description"], "input_schema": schema}

    def call(entry: Mapping[str, Any]) -> dict[str, Any]:
        ((name, params),) = entry.items()
        arguments = {}
        for param, values in params.items():
            listed = [value for value in values if value != ""]
            arguments[param] = {"one_of": listed, **({"optional": True} if "" in values else {})}
        return {"name": name, "arguments": arguments}

    lines = [
        json.dumps(
            {
                "id": "bfcl-sample",
                "defaults": {
                    "grader": "tool_trace",
                    "tool_match": "unordered",
                    "argument_match": "exact",
                },
            }
        )
    ]
    for entry in sample:
        case = {
            "id": entry["id"],
            "prompt": entry["question"],
            "tools": [tool(name) for name in entry["functions"]],
            "expected_tool_calls": [call(item) for item in entry["ground_truth"]],
            "output": [
                {"name": name, "arguments": arguments}
                for item in entry["model"]
                for name, arguments in item.items()
            ],
        }
        lines.append(json.dumps(case))
    return "\n".join(lines) + "\n"


def _same_json(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _bfcl_call_ok(model: Mapping[str, Any], truth: Mapping[str, Any]) -> bool:
    """BFCL's rule for one call, on its own shapes: the same function; every argument the
    model gave is a parameter with that value listed as acceptable; every parameter without
    "" among its acceptable values was given."""
    ((name, given),) = model.items()
    ((want_name, params),) = truth.items()
    if name != want_name:
        return False
    for param, value in given.items():
        if param not in params:
            return False
        if not any(_same_json(value, ok) for ok in params[param] if ok != ""):
            return False
    return all(param in given or "" in values for param, values in params.items())


def _bfcl_score(model: Sequence[Mapping[str, Any]], truth: Sequence[Mapping[str, Any]]) -> float:
    if not model and not truth:
        return 1.0
    matched = _brute_matching(model, truth, _bfcl_call_ok)
    return matched / max(len(model), len(truth))


def test_a_bfcl_sample_as_jsonl_graded_unordered_with_arguments(tmp_path: Path) -> None:
    path = tmp_path / "bfcl.evalset.jsonl"
    path.write_text(_convert(BFCL_SAMPLE), encoding="utf-8")
    evalset = load_evalset(path)
    assert evalset.lines == tuple(range(2, 2 + len(BFCL_SAMPLE)))
    evaluator = CaseScorer(graders=build_graders(), min_score=0.5, flags=CLI_FLAGS)
    scores = {
        case.id: evaluator.score(case, GradeContext(eval_set_id=evalset.id))
        for case in evalset.cases
    }
    expected = {
        entry["id"]: _bfcl_score(entry["model"], entry["ground_truth"]) for entry in BFCL_SAMPLE
    }
    for case_id, score in scores.items():
        assert score.value == pytest.approx(expected[case_id]), case_id
    # The sample exercises every kind of credit, so the comparison above can fail.
    assert expected == pytest.approx(
        {
            "parallel_0": 1.0,
            "parallel_1": 1 / 3,
            "parallel_multiple_0": 2 / 3,
            "parallel_multiple_1": 0.5,
            "simple_0": 0.0,
            "irrelevance_0": 1.0,
        }
    )
    # Stored text of a trace is JSON objects, so `show --json` gives the list back.
    stored = scores["parallel_0"].output
    assert stored is not None
    assert json.loads(f"[{stored}]")[0] == {
        "name": "get_weather",
        "arguments": {"city": "Tokyo", "unit": "celsius"},
    }


def test_the_runner_grades_the_models_calls_with_their_arguments() -> None:
    from verdryx_core.llm import StubAdapter

    case = _case(
        tools=[{"name": "lookup", "input_schema": {"type": "object"}}],
        expected_tool_calls=[{"name": "lookup", "arguments": {"id": 7}}],
    )
    for made, value in (({"id": 7}, 1.0), ({"id": 8}, 0.0)):
        model = StubAdapter(tool_calls=[{"name": "lookup", "arguments": made}])
        evaluator = CaseScorer(
            graders=build_graders(), live=ModelSource(model), min_score=0.5, flags=CLI_FLAGS
        )
        score = evaluator.score(case, CONTEXT)
        assert score.value == value
        assert json.loads(f"[{score.output}]") == [{"name": "lookup", "arguments": made}]


def test_display_texts_of_traces_and_expectations() -> None:
    from verdryx_core.cases import expected_text, output_text

    made = [{"name": "a", "arguments": {"x": 1}}, ToolCall(name="b", arguments={})]
    assert json.loads(f"[{output_text(made)}]") == [
        {"name": "a", "arguments": {"x": 1}},
        {"name": "b", "arguments": {}},
    ]
    assert output_text(["a", "b"]) == "a, b" and output_text("text") == "text"
    assert output_text(None) is None
    calls = _case(expected_tool_calls=[{"name": "a", "arguments": {"x": 1}}, {"name": "b"}])
    assert json.loads(f"[{expected_text(calls)}]") == [
        {"name": "a", "arguments": {"x": 1}},
        {"name": "b"},
    ]
    any_ = _case(expected_tool_calls_any=[[{"name": "a"}], [{"name": "b"}]])
    assert expected_text(any_) == '{"name":"a"} | {"name":"b"}'
    assert expected_text(_case(expected_tools=["a", "b"])) == "a, b"
    checks = EvalCase.from_dict(
        {
            "id": "c",
            "prompt": "p",
            "checks": [
                {"grader": "exact", "expected": "x"},
                {"grader": "llm_judge", "rubric": "polite?"},
            ],
        }
    )
    assert expected_text(checks) == "exact: x; llm_judge: polite?"
