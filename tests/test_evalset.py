"""Eval set loading: every bad input is one line naming file, case and field."""

from __future__ import annotations

import functools
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from verdryx_core.cases import GRADER_KINDS, EvalCase
from verdryx_core.errors import EvalSetError, VerdryxError
from verdryx_core.evalsets.load import EvalSet, evalset_schema, load_evalset

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

OK_CASE: dict[str, Any] = {"id": "ok-1", "prompt": "say hi", "expected": "hi"}


def write_set(tmp_path: Path, data: object, name: str = "bad.evalset.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def load_error(path: Path) -> EvalSetError:
    with pytest.raises(EvalSetError) as info:
        load_evalset(path)
    error = info.value
    assert isinstance(error, VerdryxError)
    message = str(error)
    assert "\n" not in message, f"message must be one line: {message!r}"
    assert str(path) in message, f"message must name the file: {message!r}"
    return error


def assert_names(error: EvalSetError, *, case: str | None, field: str | None) -> str:
    """The message names the case (id or 1-based index) and the field."""
    message = str(error)
    if case is not None:
        assert case in message, f"case {case!r} not named in {message!r}"
        assert error.case is not None and case in error.case
    if field is not None:
        assert f"field '{field}'" in message, f"field {field!r} not named in {message!r}"
        assert error.field == field
    return message


# -- good files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["support/support-agent.evalset.json", "tools/tool-agent.evalset.json"]
)
def test_the_examples_load(name: str) -> None:
    evalset = EvalSet.load(EXAMPLES / name)
    data = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    assert evalset.id == data["id"]
    assert [case.id for case in evalset.cases] == [case["id"] for case in data["cases"]]
    assert evalset.path == EXAMPLES / name


def test_a_case_round_trips_through_its_dict(tmp_path: Path) -> None:
    case = {
        "id": "trace",
        "prompt": "refund 1",
        "grader": "tool_trace",
        "tools": [
            {"name": "lookup", "input_schema": {"type": "object"}},
            {"name": "refund", "input_schema": {"type": "object"}},
        ],
        "expected_tools": ["lookup", "refund"],
        "output": ["lookup"],
        "min_score": 0.5,
        "tags": ["refund"],
    }
    evalset = load_evalset(write_set(tmp_path, {"id": "s", "cases": [case]}, "ok.evalset.json"))
    loaded = evalset.cases[0]
    assert loaded.expected_tools == ("lookup", "refund")
    assert loaded.output == ["lookup"]
    assert loaded.to_dict() == case
    assert EvalCase.from_dict(loaded.to_dict()) == loaded


def test_a_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bom.evalset.json"
    path.write_text("\ufeff" + json.dumps({"id": "s", "cases": [OK_CASE]}), encoding="utf-8")
    assert load_evalset(path).cases[0].id == "ok-1"


def test_the_recorded_output_is_not_part_of_the_fingerprint() -> None:
    base = EvalCase(id="a", prompt="p", expected="x")
    assert (
        base.fingerprint() == EvalCase(id="a", prompt="p", expected="x", output="y").fingerprint()
    )
    assert base.fingerprint() != EvalCase(id="a", prompt="p", expected="z").fingerprint()


# -- bad input, each naming file, case and field -------------------------------------


def test_not_json_names_line_and_column(tmp_path: Path) -> None:
    path = write_set(tmp_path, '{"id": "s",\n "cases": [\n  {"id": "a",}\n]}')
    message = str(load_error(path))
    assert "not valid JSON" in message
    assert "line 3, column 14" in message


def test_nan_is_not_json(tmp_path: Path) -> None:
    # Python's json would read it, and a NaN min_score passes every range check.
    raw = '{"id": "s", "cases": [{"id": "a", "prompt": "p", "expected": "x", "min_score": NaN}]}'
    message = str(load_error(write_set(tmp_path, raw)))
    assert "NaN" in message


def test_a_missing_file_is_an_eval_set_error(tmp_path: Path) -> None:
    message = str(load_error(tmp_path / "nope.evalset.json"))
    assert "cannot read" in message


@pytest.mark.parametrize("missing", ["id", "prompt"])
def test_a_case_without_a_required_field(tmp_path: Path, missing: str) -> None:
    broken = {"id": "second", "prompt": "p", "expected": "x"}
    del broken[missing]
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [OK_CASE, broken]}))
    # Without an id the case is named by its 1-based index.
    case = "#2" if missing == "id" else "'second' (#2)"
    message = assert_names(error, case=case, field=missing)
    assert "required" in message


def test_duplicate_ids(tmp_path: Path) -> None:
    other = {"id": "ok-1", "prompt": "again", "expected": "y"}
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [OK_CASE, other]}))
    message = assert_names(error, case="'ok-1' (#2)", field="id")
    assert "duplicate" in message and "#1" in message


def test_an_unknown_grader_lists_the_allowed_ones(tmp_path: Path) -> None:
    case = {"id": "fuzzy-1", "prompt": "p", "grader": "fuzzy"}
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [OK_CASE, case]}))
    message = assert_names(error, case="'fuzzy-1' (#2)", field="grader")
    assert "'fuzzy'" in message
    for kind in GRADER_KINDS:
        assert kind in message


@pytest.mark.parametrize("field", ["tools", "expected_tools"])
def test_tool_fields_on_a_non_tool_trace_case(tmp_path: Path, field: str) -> None:
    case = {"id": "plain", "prompt": "p", "expected": "x", "grader": "exact"}
    case[field] = [{"name": "lookup", "input_schema": {}}] if field == "tools" else ["lookup"]
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [case]}))
    message = assert_names(error, case="'plain' (#1)", field=field)
    assert "tool_trace" in message and "'exact'" in message


def test_tool_trace_requires_an_expectation(tmp_path: Path) -> None:
    case = {
        "id": "trace",
        "prompt": "p",
        "grader": "tool_trace",
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
    }
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [OK_CASE, case]}))
    message = assert_names(error, case="'trace' (#2)", field="expected_tools")
    assert "requires" in message


def test_tool_trace_loads_without_tools(tmp_path: Path) -> None:
    # A target owns its tools (docs/evalset-reference.md): `tools` are needed only when the
    # model is asked, which is that case's error when it runs.
    case = {"id": "trace", "prompt": "p", "grader": "tool_trace", "expected_tools": ["lookup"]}
    (loaded,) = load_evalset(write_set(tmp_path, {"id": "s", "cases": [case]})).cases
    assert loaded.tools is None and loaded.calls_tools


def test_a_string_output_on_tool_trace(tmp_path: Path) -> None:
    case = {
        "id": "trace",
        "prompt": "p",
        "grader": "tool_trace",
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
        "expected_tools": ["lookup"],
        "output": "lookup",
    }
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [case]}))
    assert_names(error, case="'trace' (#1)", field="output")


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(ab", "missing )"),
        ("a(?i)b", "global flags"),  # regex accepts it, stdlib re does not
        (r"\p{L}", "bad escape"),  # a regex-only escape
        ("[[:alpha:]]", "ambiguous"),  # a POSIX class to regex, a plain set to re
    ],
)
def test_an_invalid_regex(tmp_path: Path, pattern: str, why: str) -> None:
    case = {"id": "re-1", "prompt": "p", "grader": "regex", "expected": pattern}
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [case]}))
    message = assert_names(error, case="'re-1' (#1)", field="expected")
    assert "not a valid regex" in message and why in message


def test_an_empty_eval_set(tmp_path: Path) -> None:
    error = load_error(write_set(tmp_path, {"id": "s", "cases": []}))
    message = assert_names(error, case=None, field="cases")
    assert "no cases" in message


@pytest.mark.parametrize(
    ("data", "case", "field", "expected"),
    [
        ({"id": 3, "cases": [OK_CASE]}, None, "id", "expected string, got a number"),
        ({"id": "s", "cases": {}}, None, "cases", "expected array, got an object"),
        (
            {"id": "s", "cases": [OK_CASE, {"id": "b", "prompt": 5, "expected": "x"}]},
            "'b' (#2)",
            "prompt",
            "expected string, got a number",
        ),
        (
            {"id": "s", "cases": [{"id": "b", "prompt": "p", "expected": "x", "min_score": "hi"}]},
            "'b' (#1)",
            "min_score",
            "expected number, got a string",
        ),
        (
            {"id": "s", "cases": [{"id": "b", "prompt": "p", "expected": "x", "min_score": True}]},
            "'b' (#1)",
            "min_score",
            "expected number, got a boolean",
        ),
        (
            {"id": "s", "cases": [{"id": "b", "prompt": "p", "expected": "x", "tags": ["a", 3]}]},
            "'b' (#1)",
            "tags[1]",
            "expected string, got a number",
        ),
        (
            {"id": "s", "cases": [{"id": "b", "prompt": "p", "expected": "x", "min_score": 2}]},
            "'b' (#1)",
            "min_score",
            "greater than the maximum of 1",
        ),
        (
            {"id": "s", "cases": [{"id": "b c", "prompt": "p", "expected": "x"}]},
            "'b c' (#1)",
            "id",
            "not a usable case id",
        ),
        (
            {"id": "s", "cases": [{"id": "b", "prompt": "p", "expectd": "x"}]},
            "'b' (#1)",
            "expectd",
            "did you mean 'expected'",
        ),
    ],
)
def test_wrong_types_and_values(
    tmp_path: Path, data: object, case: str | None, field: str, expected: str
) -> None:
    error = load_error(write_set(tmp_path, data))
    message = assert_names(error, case=case, field=field)
    assert expected in message


def test_a_case_that_is_not_an_object(tmp_path: Path) -> None:
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [OK_CASE, "just text"]}))
    message = assert_names(error, case="#2", field=None)
    assert "expected object, got a string" in message


def test_the_top_level_must_be_an_object(tmp_path: Path) -> None:
    message = str(load_error(write_set(tmp_path, [OK_CASE])))
    assert "JSON object" in message and "an array" in message


@pytest.mark.parametrize(("grader", "field"), [("exact", "expected"), ("regex", "expected")])
def test_exact_and_regex_need_expected(tmp_path: Path, grader: str, field: str) -> None:
    case = {"id": "c", "prompt": "p", "grader": grader}
    error = load_error(write_set(tmp_path, {"id": "s", "cases": [case]}))
    assert_names(error, case="'c' (#1)", field=field)


def test_the_first_bad_case_in_file_order_is_reported(tmp_path: Path) -> None:
    cases = [
        OK_CASE,
        {"id": "second", "prompt": 1, "expected": "x"},
        {"id": "third", "expected": "x"},
    ]
    error = load_error(write_set(tmp_path, {"id": "s", "cases": cases}))
    assert_names(error, case="'second' (#2)", field="prompt")


# -- the schema and the loader agree ---------------------------------------------------------


def test_the_published_schema_lists_the_grader_kinds() -> None:
    """The built-in kinds, then the add-on graders verdryx itself installs (by entry point)."""
    schema = evalset_schema()
    shipped = sorted(
        (
            point.name
            for point in metadata.entry_points(group="verdryx.graders")
            if point.dist is not None and point.dist.name == "verdryx"
        ),
        reverse=True,
    )
    assert shipped == ["typed", "contract"]
    assert schema["$defs"]["grader"]["examples"] == [*GRADER_KINDS, *shipped]


_ids = st.text(alphabet="abcdefghij-_0123456789", min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(st.lists(_ids, min_size=1, max_size=8))
def test_ids_load_iff_unique(tmp_path_factory: pytest.TempPathFactory, ids: list[str]) -> None:
    tmp_path = tmp_path_factory.mktemp("ids")
    cases = [{"id": case_id, "prompt": "p", "expected": "x"} for case_id in ids]
    path = write_set(tmp_path, {"id": "s", "cases": cases})
    if len(set(ids)) == len(ids):
        assert [case.id for case in load_evalset(path).cases] == ids
    else:
        first_repeat = next(i for i, case_id in enumerate(ids) if case_id in ids[:i])
        error = load_error(path)
        assert error.field == "id"
        assert error.case is not None and f"#{first_repeat + 1}" in error.case


# The fast validator (fastjsonschema) decides whether a file is valid; jsonschema only words
# the error. They must agree on every document, or a bad file could slip through.
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(-1, 2, allow_nan=False),
    st.sampled_from(["", "a", "x y", "exact", "regex", "tool_trace", "contract", "a:b"]),
    st.lists(st.sampled_from(["a", "", "b"]), max_size=3),
    st.lists(st.dictionaries(st.sampled_from(["name"]), st.just("t")), max_size=2),
    st.dictionaries(st.sampled_from(["success_criteria"]), st.just([]), max_size=1),
)
_case_keys = st.sampled_from(
    ["id", "prompt", "grader", "expected", "rubric", "tools", "expected_tools", "output",
     "min_score", "tags", "contract", "description", "bogus"]
)  # fmt: skip
# Mostly valid cases with a few fields changed, so both verdicts are common.
_cases = st.builds(
    lambda base, changes: {**base, **changes},
    st.sampled_from(
        [
            {"id": "c1", "prompt": "p", "expected": "e"},
            {"id": "c2", "prompt": "p", "grader": "regex", "expected": "a+", "tags": ["t"]},
            {"id": "c3", "prompt": "p", "grader": "tool_trace",
             "tools": [{"name": "t", "input_schema": {}}],
             "expected_tools": [], "output": ["t"]},
            {"id": "c4", "prompt": "resolved", "grader": "outcome_tag", "min_score": 0.5},
        ]
    ),
    st.one_of(st.just({}), st.dictionaries(_case_keys, _values, max_size=1)),
)  # fmt: skip
_documents = st.fixed_dictionaries(
    {"id": st.sampled_from(["set", "set", "", 7]), "cases": st.lists(_cases, max_size=3)},
    optional={"bogus": _values, "description": _values},
)


@functools.cache
def _both_validators() -> tuple[Any, Any]:
    """Each schema compiled once for all examples (compiling is most of an example's cost)."""
    import fastjsonschema
    import jsonschema

    from verdryx_core.evalsets.load import evalset_schema

    schema = evalset_schema()
    return fastjsonschema.compile(schema), jsonschema.Draft202012Validator(schema)


@given(document=_documents)
@settings(max_examples=300, deadline=None)
def test_the_fast_and_the_wording_validators_agree(document: dict[str, object]) -> None:
    import fastjsonschema

    fast, slow = _both_validators()
    try:
        fast(document)
        fast_ok = True
    except fastjsonschema.JsonSchemaException:
        fast_ok = False
    slow_ok = not list(slow.iter_errors(document))
    event("valid" if slow_ok else "invalid")
    assert fast_ok == slow_ok


def test_the_fast_validator_leaves_the_published_schema_as_it_is() -> None:
    import copy

    from verdryx_core.evalsets import load as evalset

    before = copy.deepcopy(evalset.evalset_schema())
    evalset._fast_validator.cache_clear()
    evalset._fast_validator()
    assert evalset.evalset_schema() == before
