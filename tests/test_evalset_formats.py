"""Eval sets as JSONL and CSV, set defaults, the conversation fields and tool checks
(docs/evalset-reference.md): the same cases in every format load to the same EvalCases, and
every bad input is one line naming the file, the line, the case and the field."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.cases import EvalCase
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset

TOOL = {"name": "lookup", "description": "d", "input_schema": {"type": "object"}}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def as_jsonl(header: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(item) for item in [header, *cases]) + "\n"


def load_error(path: Path) -> EvalSetError:
    with pytest.raises(EvalSetError) as info:
        load_evalset(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    return info.value


CASES: list[dict[str, Any]] = [
    {"id": "q1", "prompt": "2+2?", "grader": "numeric", "expected": 4, "output": "It is 4."},
    {"id": "q2", "prompt": "Capital?", "grader": "icontains", "expected": "paris"},
    {"id": "q3", "prompt": "Name", "expected": "Ada  Lovelace", "normalize_whitespace": True},
    {
        "id": "q4",
        "prompt": "JSON",
        "grader": "json",
        "fields": {"a.b": 1},
        "schema": {"type": "object"},
    },
    {"id": "q5", "prompt": "Who?", "grader": "f1", "expected": "the cat", "tags": ["x", "y"]},
]


# -- the same cases in three formats -----------------------------------------------------------


def _csv_text(cases: list[dict[str, Any]], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for case in cases:
        row = []
        for column in columns:
            value = case.get(column)
            if value is None:
                row.append("")
            elif isinstance(value, bool):
                row.append("true" if value else "false")
            elif isinstance(value, dict):
                row.append(json.dumps(value))
            elif isinstance(value, list):
                row.append(" ".join(value))
            else:
                row.append(str(value))
        writer.writerow(row)
    return out.getvalue()


def test_json_jsonl_and_csv_load_the_same_cases(tmp_path: Path) -> None:
    header = {"id": "fmt", "defaults": {"min_score": 0.75, "ignore_case": True}}
    from_json = load_evalset(
        write(tmp_path, "a.evalset.json", json.dumps({**header, "cases": CASES}))
    )
    from_jsonl = load_evalset(write(tmp_path, "b.evalset.jsonl", as_jsonl(header, CASES)))
    columns = ["id", "prompt", "grader", "expected", "output", "normalize_whitespace"]
    columns += ["fields", "schema", "tags"]
    write(tmp_path, "c.evalset.csv.json", json.dumps(header))
    from_csv = load_evalset(write(tmp_path, "c.evalset.csv", _csv_text(CASES, columns)))
    assert from_json.cases == from_jsonl.cases == from_csv.cases
    assert from_jsonl.lines == (2, 3, 4, 5, 6)
    assert from_csv.lines == (2, 3, 4, 5, 6)
    by_id = {case.id: case for case in from_json.cases}
    # Defaults: min_score everywhere, ignore_case only where the grader takes it.
    assert all(case.min_score == 0.75 for case in from_json.cases)
    assert by_id["q3"].options == {"normalize_whitespace": True, "ignore_case": True}
    assert by_id["q1"].options == {} and by_id["q1"].expected == "4"


def test_a_case_keeps_its_own_values_over_the_defaults(tmp_path: Path) -> None:
    header = {
        "id": "d",
        "defaults": {"grader": "contains", "min_score": 1.0, "ignore_case": True},
        "target": "agents.support:run",
    }
    cases = [
        {"id": "a", "prompt": "p", "expected": "x"},
        {"id": "b", "prompt": "p", "expected": "x", "grader": "regex", "min_score": 0.2},
        {"id": "c", "prompt": "p", "expected": "x", "ignore_case": False, "target": "m:f"},
    ]
    evalset = load_evalset(write(tmp_path, "d.evalset.jsonl", as_jsonl(header, cases)))
    a, b, c = evalset.cases
    assert (a.grader, a.min_score, a.options, a.target) == (
        "contains",
        1.0,
        {"ignore_case": True},
        "agents.support:run",
    )
    assert (b.grader, b.min_score, b.options) == ("regex", 0.2, {})
    assert (c.options, c.target) == ({"ignore_case": False}, "m:f")
    assert evalset.target == "agents.support:run"


def test_csv_without_a_sidecar_reads_headers_as_fields(tmp_path: Path) -> None:
    text = 'id,prompt,expected,min_score,tags\nx1,hi,hello,0.5,"a, b"\n\nx2,yo,yo,,\n'
    evalset = load_evalset(write(tmp_path, "plain.evalset.csv", text))
    assert evalset.id == "plain"
    assert [c.id for c in evalset.cases] == ["x1", "x2"]
    assert evalset.cases[0].min_score == 0.5 and evalset.cases[0].tags == ("a", "b")
    assert evalset.cases[1].min_score is None
    assert evalset.lines == (2, 4)


def test_csv_rows_spanning_lines_keep_their_first_line(tmp_path: Path) -> None:
    text = 'id,prompt,expected\na,"line one\nline two",x\nb,p,\n'
    error = load_error(write(tmp_path, "multi.evalset.csv", text))
    assert error.line == 4 and error.field == "expected" and "'b' (#2)" in str(error)


# -- bad input, one line each ----------------------------------------------------------------

HEADER = json.dumps({"id": "s"})


@pytest.mark.parametrize(
    ("lines", "line", "field", "words"),
    [
        ([HEADER, '{"id": "a", "prompt": "p", "expected": "x"}', "{oops"], 3, None,
         "not valid JSON"),
        ([HEADER, '{"id": "a", "prompt": "p", "expected": 3}'], 2, "expected", "expected string"),
        ([HEADER, "", '{"id": "a", "prompt": "p"}'], 3, "expected", "requires"),
        (['{"id": "s", "cases": []}'], 1, "cases", "one per line"),
        (['{"id": "a", "prompt": "p"}'], 1, None, "looks like a case"),
        ([HEADER, '{"id": "a", "prompt": "p", "expected": "x", "min_score": NaN}'], 2, None, "NaN"),
        (['{"id": "s", "defaults": {"grader": "nope"}}', '{"id": "a", "prompt": "p"}'], 1,
         "defaults.grader", "not a grader"),
        (['{"id": "s", "defaults": {"bogus": 1}}', '{"id": "a", "prompt": "p"}'], 1,
         "defaults.bogus", "not a known field"),
    ],
)  # fmt: skip
def test_jsonl_errors_name_the_line(
    tmp_path: Path, lines: list[str], line: int, field: str | None, words: str
) -> None:
    error = load_error(write(tmp_path, "bad.evalset.jsonl", "\n".join(lines) + "\n"))
    assert error.line == line and f"bad.evalset.jsonl:{line}:" in str(error)
    assert error.field == field
    assert words in str(error)


@pytest.mark.parametrize(
    ("text", "sidecar", "line", "field", "words"),
    [
        ("id,prompt,expected,min_score\na,p,x,high\n", None, 2, "min_score", "expected a number"),
        ("id,prompt,expected,ignore_case\na,p,x,maybe\n", None, 2, "ignore_case", "true or false"),
        ("id,prompt,expected,metadata\na,p,x,{bad\n", None, 2, "metadata", "not valid JSON"),
        ("id,prompt,expectd\na,p,x\n", None, 2, "expectd", "did you mean 'expected'"),
        ("id,prompt\na,p,x,y\n", None, 2, None, "cells in a row"),
        ("id,question\na,p\n", {"columns": {"id": "id", "prompt": "q"}}, None, "columns.prompt",
         "not in"),
        ("id,prompt\na,p\n", {"cases": []}, None, "cases", "not a known field"),
    ],
)  # fmt: skip
def test_csv_errors_name_the_line_or_the_sidecar(
    tmp_path: Path,
    text: str,
    sidecar: dict[str, Any] | None,
    line: int | None,
    field: str | None,
    words: str,
) -> None:
    if sidecar is not None:
        write(tmp_path, "bad.evalset.csv.json", json.dumps(sidecar))
    path = write(tmp_path, "bad.evalset.csv", text)
    with pytest.raises(EvalSetError) as info:
        load_evalset(path)
    error = info.value
    assert "\n" not in str(error)
    assert error.line == line and error.field == field
    assert words in str(error)
    if sidecar is not None:
        assert error.path.endswith(".csv.json")


def _bad(case: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "prompt": "p", **case}


BAD_CASES = [
    # field, case, words
    ("ignore_case", _bad({"grader": "regex", "expected": "x", "ignore_case": True}), "only valid"),
    ("ignore_case", _bad({"expected": "x", "ignore_case": "yes"}), "expected boolean"),
    ("tolerance", _bad({"grader": "numeric", "expected": 1, "tolerance": -1}), "minimum"),
    ("expected", _bad({"grader": "numeric", "expected": "many"}), "expects a number"),
    ("expected", _bad({"grader": "numeric"}), "requires"),
    ("expected", _bad({"grader": "numeric", "expected": "1e400"}), "finite"),
    ("expected", _bad({"grader": "json", "expected": "{nope"}), "JSON text"),
    ("schema", _bad({"grader": "json", "schema": {"type": 12}}), "not a valid JSON Schema"),
    ("fields", _bad({"grader": "json", "fields": []}), "expected object"),
    ("expected", _bad({"grader": "contains"}), "requires"),
    ("expected", _bad({"grader": "f1"}), "requires"),
    ("tool_match", _bad({"expected": "x", "tool_match": "any"}), "not allowed"),
    ("argument_match", _bad({"grader": "tool_trace", "expected_tools": [], "output": [],
                             "argument_match": "fuzzy"}), "not allowed"),
    ("tools[0].input_schema", _bad({"grader": "tool_trace", "expected_tools": ["lookup"],
                                    "tools": [{"name": "lookup", "parameters": {}}]}),
     "input_schema"),
    ("tools[0].name", _bad({"grader": "tool_trace", "expected_tools": [],
                            "tools": [{"name": "look up", "input_schema": {}}]}),
     "not a usable tool name"),
    ("tools[1].name", _bad({"grader": "tool_trace", "expected_tools": [],
                            "tools": [TOOL, TOOL]}), "offered twice"),
    ("expected_tool_calls[0].name", _bad({"grader": "tool_trace", "tools": [TOOL],
                                          "expected_tool_calls": [{"name": "refund"}]}),
     "not offered"),
    ("expected_tool_calls[0].name", _bad({"grader": "tool_trace", "output": [],
                                          "expected_tool_calls": [{"name": "a b"}]}),
     "not a usable tool name"),
    ("expected_tool_calls[0].args", _bad({"grader": "tool_trace", "output": [],
                                          "expected_tool_calls": [{"name": "a", "args": {}}]}),
     "not a known field"),
    ("expected_tool_calls_any[1][0].name", _bad({
        "grader": "tool_trace", "tools": [TOOL],
        "expected_tool_calls_any": [[{"name": "lookup"}], [{"name": "other"}]]}), "not offered"),
    ("expected_tool_calls", _bad({"grader": "tool_trace", "output": [], "expected_tools": [],
                                  "expected_tool_calls": []}), "not both"),
    ("expected", _bad({"grader": "tool_trace", "expected": "a", "tools": [TOOL]}),
     "not 'expected'"),
    ("output", _bad({"grader": "tool_trace", "expected_tool_calls": [
        {"name": "a", "arguments": {}}], "output": ["a"]}), "names only"),
    ("expected_tool_calls", _bad({"expected": "x", "expected_tool_calls": []}), "only valid"),
    ("checks", _bad({"grader": "exact", "checks": [{"grader": "exact", "expected": "x"}]}),
     "not both"),
    ("checks[0].grader", _bad({"checks": [{"grader": "outcome_tag"}]}), "cannot be a check"),
    ("checks[0].expected_tools", _bad({"checks": [{"grader": "tool_trace"}]}), "requires"),
    ("checks[1].grader", _bad({"checks": [{"grader": "exact", "expected": "x"},
                                          {"grader": "nope"}]}), "not a grader"),
    ("checks[0].expected", _bad({"checks": [{"grader": "exact"}]}), "requires"),
    ("checks[0].weight", _bad({"checks": [{"grader": "exact", "expected": "x", "weight": 0}]}),
     "minimum of 0"),
    ("checks[0].rubric", _bad({"checks": [{"grader": "llm_judge"}]}), "rubric"),
    ("ignore_case", _bad({"ignore_case": True, "checks": [{"grader": "exact", "expected": "x"}]}),
     "on each check"),
    ("checks", _bad({"checks": []}), "should be non-empty"),
    ("prompt", {"id": "c", "expected": "x"}, "or give 'messages'"),
    ("messages", _bad({"expected": "x", "messages": []}), "should be non-empty"),
    ("messages[0].role", _bad({"expected": "x", "messages": [{"role": "system",
                                                              "content": "x"}]}), "not allowed"),
    ("messages[1].role", _bad({"expected": "x", "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}), "last message"),
    ("messages[0].content", _bad({"expected": "x", "messages": [{"role": "user"}]}), "required"),
    ("metadata", _bad({"expected": "x", "metadata": [1]}), "expected object"),
    ("system", _bad({"expected": "x", "system": 3}), "expected string"),
    ("target", _bad({"expected": "x", "target": "no-colon"}), "module:callable"),
    ("grader", _bad({"grader": "nope", "expected": "x"}), "not a grader"),
    ("options", _bad({"expected": "x", "options": {}}), "custom grader"),
]  # fmt: skip


@pytest.mark.parametrize(("field", "case", "words"), BAD_CASES)
def test_each_new_field_rejects_bad_input_in_one_line(
    tmp_path: Path, field: str, case: dict[str, Any], words: str
) -> None:
    path = write(tmp_path, "bad.evalset.json", json.dumps({"id": "s", "cases": [case]}))
    error = load_error(path)
    assert error.field == field, str(error)
    assert error.case is not None and "#1" in error.case
    assert words in str(error)


def test_a_set_level_target_is_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "t.evalset.jsonl", as_jsonl({"id": "s", "target": "x"}, [_bad({})]))
    error = load_error(path)
    assert error.field == "target" and error.line == 1


# -- the conversation fields and the fingerprint -------------------------------------------------


def test_messages_make_the_prompt_optional(tmp_path: Path) -> None:
    case = {
        "id": "conv",
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Refund order 7?"},
        ],
        "metadata": {"customer": {"tier": "gold"}},
        "grader": "contains",
        "expected": "refund",
    }
    path = write(tmp_path, "c.evalset.json", json.dumps({"id": "s", "cases": [case]}))
    loaded = load_evalset(path).cases[0]
    assert loaded.prompt == "Refund order 7?"
    assert loaded.system == "You are terse."
    assert loaded.messages is not None and len(loaded.messages) == 3
    assert loaded.metadata == {"customer": {"tier": "gold"}}
    assert EvalCase.from_dict(loaded.to_dict()) == loaded


def test_a_recorded_output_may_follow_an_assistant_turn(tmp_path: Path) -> None:
    case = {
        "id": "c",
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "expected": "a",
        "output": "a",
    }
    path = write(tmp_path, "c.evalset.json", json.dumps({"id": "s", "cases": [case]}))
    assert load_evalset(path).cases[0].prompt == "q"


def test_each_new_field_enters_the_fingerprint() -> None:
    base = EvalCase(id="a", prompt="p", expected="x")
    changes: list[dict[str, Any]] = [
        {"system": "s"},
        {"messages": ({"role": "user", "content": "p"},)},
        {"metadata": {"k": 1}},
        {"target": "m:f"},
        {"options": {"ignore_case": True}},
        {"expected_tool_calls": ({"name": "a"},)},
    ]
    seen = {base.fingerprint()}
    for change in changes:
        fingerprint = EvalCase(id="a", prompt="p", expected="x", **change).fingerprint()
        assert fingerprint not in seen, change
        seen.add(fingerprint)


def test_the_fingerprint_of_a_case_without_new_fields_is_unchanged() -> None:
    # The hash of the original payload shape, computed independently.
    import hashlib

    payload = {
        "prompt": "p",
        "grader": "exact",
        "expected": "x",
        "rubric": None,
        "tools": None,
        "expected_tools": None,
        "contract": None,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert (
        EvalCase(id="a", prompt="p", expected="x").fingerprint()
        == hashlib.sha256(text.encode()).hexdigest()
    )


# -- JSONL agrees with JSON on every document ------------------------------------------------

_case_strategy = st.fixed_dictionaries(
    {"id": st.text(alphabet="abc123", min_size=1, max_size=4), "prompt": st.text(max_size=5)},
    optional={
        "expected": st.one_of(st.text(max_size=3), st.integers(0, 3)),
        "grader": st.sampled_from(["exact", "contains", "numeric", "f1", "bogus"]),
        "min_score": st.one_of(st.floats(0, 1), st.just(2), st.just("x")),
        "ignore_case": st.booleans(),
    },
)


@settings(max_examples=150, deadline=None)
@given(cases=st.lists(_case_strategy, min_size=1, max_size=4))
def test_jsonl_and_json_accept_and_refuse_alike(
    tmp_path_factory: pytest.TempPathFactory, cases: list[dict[str, Any]]
) -> None:
    tmp_path = tmp_path_factory.mktemp("agree")
    json_path = write(tmp_path, "s.evalset.json", json.dumps({"id": "s", "cases": cases}))
    jsonl_path = write(tmp_path, "s.evalset.jsonl", as_jsonl({"id": "s"}, cases))
    outcomes = []
    for path in (json_path, jsonl_path):
        try:
            outcomes.append(("ok", load_evalset(path).cases))
        except EvalSetError as exc:
            outcomes.append(("error", (exc.case, exc.field)))
    assert outcomes[0] == outcomes[1]


def test_every_format_knows_the_line_each_case_starts_on(tmp_path: Path) -> None:
    text = (
        '{"id": "s", "description": "a [tricky] {text} \\" ]",\n'
        ' "defaults": {"tools": [{"name": "t", "input_schema": {}}]},\n'
        ' "cases": [\n'
        '  {"id": "a", "prompt": "[{", "expected": "x"},\n'
        "\n"
        "  {\n"
        '   "id": "b", "prompt": "p", "expected": "}]", "metadata": {"k": [1, {"z": 2}]}\n'
        '  }, {"id": "c", "prompt": "p", "expected": "x"}\n'
        " ]}\n"
    )
    evalset = load_evalset(write(tmp_path, "l.evalset.json", text))
    assert evalset.lines is None
    assert evalset.case_lines() == (4, 6, 8)
    jsonl = load_evalset(write(tmp_path, "l.evalset.jsonl", as_jsonl({"id": "s"}, CASES[:2])))
    assert jsonl.case_lines() == (2, 3)


@settings(max_examples=100, deadline=None)
@given(
    prompts=st.lists(st.text(alphabet='ab[]{}"\\\n ,:', max_size=8), min_size=1, max_size=5),
    description=st.text(alphabet='[]{}"\\\n', max_size=6),
)
def test_case_lines_agree_with_the_indented_layout(prompts: list[str], description: str) -> None:
    from verdryx_core.evalsets.lines import case_lines

    document = {
        "id": "s",
        "description": description,
        "cases": [
            {"id": f"c{i}", "prompt": prompt, "metadata": {"x": [prompt, {"y": prompt}]}}
            for i, prompt in enumerate(prompts)
        ],
    }
    text = json.dumps(document, indent=2)
    # With indent=2 each case opens on a line that is exactly four spaces and a brace.
    expected = tuple(n for n, line in enumerate(text.splitlines(), start=1) if line == "    {")
    assert case_lines(text) == expected
