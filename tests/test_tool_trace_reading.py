"""Tool traces compared and reported as benchmarks and people read them (docs/graders.md,
"Tool traces"): one line per call, said once; text options on string arguments; argument
types against the tool's input_schema; dotted tool names where no provider is asked."""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cases import EvalCase
from verdryx_core.errors import TargetResultError, UsageError
from verdryx_core.evalsets.load import evalset_from_data
from verdryx_core.evaluation.sources import ModelSource
from verdryx_core.graders import GradeContext
from verdryx_core.graders.tool_trace import ToolTraceGrader
from verdryx_core.llm import StubAdapter
from verdryx_core.runs import Score
from verdryx_core.targets import TargetResult
from verdryx_core.untrusted.text import printable

CONTEXT = GradeContext(eval_set_id="s")
SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "count": {"type": "integer"},
        "amount": {"type": "number"},
        "gift": {"type": "boolean"},
        "skus": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"zip": {"type": "integer"}}},
    },
}
TOOLS = [{"name": n, "input_schema": SCHEMA} for n in ("lookup", "refund", "math.factorial")]


def _case(**fields: Any) -> EvalCase:
    data = {"id": "s", "cases": [{"id": "c", "prompt": "p", "grader": "tool_trace", **fields}]}
    return evalset_from_data(data, "mem.evalset.json").cases[0]


def _grade(case: EvalCase, output: Any) -> Any:
    return ToolTraceGrader().grade(case, output, CONTEXT)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize(
    ("mode", "lines"),
    [
        (
            "ordered",
            [
                "1 of 3 expected calls matched, 3 made",
                '  missing     lookup {"order_id": "A-2"}  (expected 1)',
                '  ok          lookup {"order_id": "A-1"}  (call 1, expected 2)',
                "  wrong args  refund (call 2, expected 3): amount: expected 5, got 6",
                '  unexpected  notify {"to": "x"}  (call 3)',
            ],
        ),
        (
            "unordered",
            [
                "1 of 3 expected calls matched, 3 made",
                '  ok          lookup {"order_id": "A-1"}  (call 1, expected 2)',
                '  missing     lookup {"order_id": "A-2"}  (expected 1)',
                "  wrong args  refund (call 2, expected 3): amount: expected 5, got 6",
                '  unexpected  notify {"to": "x"}  (call 3)',
            ],
        ),
    ],
)
def test_a_failed_trace_reads_one_line_per_call(mode: str, lines: list[str]) -> None:
    case = _case(
        tool_match=mode,
        expected_tool_calls=[
            _call("lookup", order_id="A-2"),
            _call("lookup", order_id="A-1"),
            _call("refund", order_id="A-1", amount=5),
        ],
    )
    made = [_call("lookup", order_id="A-1"), _call("refund", order_id="A-1", amount=6)]
    grade = _grade(case, [*made, _call("notify", to="x")])
    head, *rest = (grade.reason or "").split("\n")
    assert head == f"tool calls ({mode}): {lines[0]}"
    assert sorted(rest) == sorted(lines[1:])
    if mode == "ordered":
        assert rest == lines[1:]  # in trace order


def test_a_wrong_call_names_each_argument_once() -> None:
    case = _case(
        expected_tool_calls=[_call("refund", order_id="A-1", amount={"one_of": [5, 6]})],
        check_types=True,
        tools=TOOLS,
    )
    grade = _grade(case, [_call("refund", amount="7", gift=True)])
    (line,) = (grade.reason or "").split("\n")[1:]
    assert line == (
        '  wrong args  refund (call 1, expected 1): order_id: missing (expected "A-1"); '
        'amount: expected {"one_of": [5, 6]}, got "7"; gift: not expected (got true); '
        'type amount: expected number, got "7"'
    )


def test_an_agents_tool_name_cannot_forge_a_line_of_the_report() -> None:
    case = _case(expected_tools=["lookup"])
    name = "lookup\n  ok          refund {}  (call 9)\x1b[2J"
    result = TargetResult(output="", tool_calls=[{"name": name, "arguments": {}}])
    grade = _grade(case, list(result.tool_calls))
    shown = printable(grade.reason or "")
    lines = shown.split("\n")
    assert len(lines) == 3 and not any(line.startswith("  ok") for line in lines)
    assert "\x1b" not in shown
    score = Score(case_id="c", eval_set_id="s", value=0.0, grader="tool_trace", reason=grade.reason)
    from pytest_verdryx.items import failure_text

    text = failure_text(score, 1.0, case)
    assert "\x1b" not in text and "expected tools:" not in text and "output:" not in text
    assert text.count("missing     lookup") == 1


def _reference(text: str, options: dict[str, bool]) -> str:
    """The documented order: NFKC, case folding, punctuation (Unicode P*), whitespace."""
    if options.get("unicode_normalize"):
        text = unicodedata.normalize("NFKC", text)
    if options.get("ignore_case"):
        text = text.casefold()
    if options.get("ignore_punctuation"):
        text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    if options.get("normalize_whitespace"):
        text = " ".join(text.split())
    return text


_text = st.text(alphabet="aAbB \t.,!-é\uff21" + string.digits[:2], max_size=10)
_options = st.fixed_dictionaries(
    {},
    optional={
        name: st.booleans()
        for name in (
            "ignore_case",
            "normalize_whitespace",
            "ignore_punctuation",
            "unicode_normalize",
        )
    },
)


@settings(max_examples=60, deadline=None)
@given(expected=_text, made=_text, options=_options)
def test_text_options_read_string_arguments_at_any_depth(
    expected: str, made: str, options: dict[str, bool]
) -> None:
    case = _case(
        expected_tool_calls=[_call("lookup", order_id=expected, skus=[expected])], **options
    )
    grade = _grade(case, [_call("lookup", order_id=made, skus=[made])])
    assert (grade.value == 1.0) == (_reference(expected, options) == _reference(made, options))


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"count": 12}, None),
        ({"count": 12.0}, "count: expected integer, got 12.0"),
        ({"count": True}, "count: expected integer, got true"),
        ({"amount": 12}, None),
        ({"amount": "12"}, 'amount: expected number, got "12"'),
        ({"gift": 1}, "gift: expected boolean, got 1"),
        ({"skus": ["a", 2]}, "skus[1]: expected string, got 2"),
        ({"address": {"zip": 7.5}}, "address.zip: expected integer, got 7.5"),
    ],
)
def test_check_types_holds_arguments_to_the_tools_schema(
    arguments: dict[str, Any], problem: str | None
) -> None:
    expected = {key: {"one_of": [value, 12, 12.0]} for key, value in arguments.items()}
    case = _case(expected_tool_calls=[_call("lookup", **expected)], check_types=True, tools=TOOLS)
    untyped = _case(expected_tool_calls=[_call("lookup", **expected)], tools=TOOLS)
    grade = _grade(case, [_call("lookup", **arguments)])
    assert _grade(untyped, [_call("lookup", **arguments)]).value == 1.0
    if problem is None:
        assert grade.value == 1.0
    else:
        assert grade.value == 0.0 and f"type {problem}" in (grade.reason or "")


def test_dotted_tool_names_load_and_grade_but_the_model_is_never_asked_with_one() -> None:
    case = _case(
        expected_tool_calls=[_call("math.factorial", count=5)], tools=TOOLS, check_types=True
    )
    assert _grade(case, [_call("math.factorial", count=5)]).value == 1.0
    with pytest.raises(UsageError) as caught:
        ModelSource(StubAdapter()).produce(case, repeat=0)
    message = str(caught.value)
    assert "\n" not in message and "'tools[2].name'" in message and "'math.factorial'" in message
    assert re.search(r"holds a '\.'", message)


def test_a_target_usage_model_must_be_a_name() -> None:
    with pytest.raises(TargetResultError, match=r"usage\.model is 5, expected a model name"):
        TargetResult(output="", usage={"input_tokens": 1, "model": 5})
    assert TargetResult(output="", usage={"model": "m"}).usage.to_dict()["model"] == "m"
