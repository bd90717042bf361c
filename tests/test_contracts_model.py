"""The contract schema (errors name the criterion id and field) and the rubric's
every branch (FAIL dominates; FLAG for errors, unverifiable claims, nothing checkable)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.addons.contracts import (
    CHECK_TYPES,
    Contract,
    ContractError,
    ContractVerdict,
    CriterionResult,
    contract_from_data,
    contract_schema,
    decide,
    load_contract,
)
from verdryx_core.errors import VerdryxError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "contracts"


def data(*criteria: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"task_id": "t", "success_criteria": list(criteria), **top}


def error_of(payload: object, **kwargs: Any) -> ContractError:
    with pytest.raises(ContractError) as info:
        contract_from_data(payload, **kwargs)
    assert isinstance(info.value, VerdryxError)
    return info.value


# -- loading and validation ------------------------------------------------------------------


def test_the_schema_is_packaged_and_is_a_valid_2020_12_schema() -> None:
    text = (
        resources.files("verdryx_core.addons.contracts")
        .joinpath("contract.schema.json")
        .read_text()
    )
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == contract_schema()
    assert schema["$defs"]["criterion"]["properties"]["type"]["enum"] == list(CHECK_TYPES)


def test_the_worked_example_validates_and_round_trips() -> None:
    contract = load_contract(EXAMPLE / "weekly-report.contract.json")
    assert {c.type for c in contract.success_criteria} == set(CHECK_TYPES)
    raw = json.loads((EXAMPLE / "weekly-report.contract.json").read_text())
    jsonschema.validate(raw, contract_schema())
    assert Contract.from_dict(contract.to_dict()) == contract
    assert contract_from_data(contract.to_dict()) == contract


def test_a_minimal_contract_and_its_defaults() -> None:
    contract = contract_from_data({"success_criteria": []}, default_task_id="case-1")
    assert contract == Contract(task_id="case-1")
    kept = contract_from_data({"task_id": "own", "success_criteria": []}, default_task_id="x")
    assert kept.task_id == "own"


def test_integral_floats_become_ints() -> None:
    contract = contract_from_data(
        data({"id": "l", "type": "line_count_gte", "path": "f", "min_lines": 2.0})
    )
    assert contract.success_criteria[0].min_lines == 2
    assert isinstance(contract.success_criteria[0].min_lines, int)


@pytest.mark.parametrize(
    ("criterion", "field", "words"),
    [
        ({"id": "a", "type": "file_contains", "path": "f"}, "pattern", "requires the field"),
        (
            {"id": "a", "type": "pattern_count_gte", "path": "f", "pattern": "x"},
            "min_count",
            "a pattern_count_gte check requires",
        ),
        ({"id": "a", "type": "line_count_gte", "path": "f"}, "min_lines", "requires"),
        ({"id": "a", "type": "sqlite_table_has_rows", "path": "f"}, "table", "requires"),
        ({"id": "a", "type": "file_exists"}, "path", "missing the required field 'path'"),
        ({"id": "a", "type": "file_exist", "path": "f"}, "type", "expected one of file_exists"),
        (
            {"id": "a", "type": "file_exists", "path": "f", "pattern": "x"},
            "pattern",
            "does not apply to a file_exists check",
        ),
        (
            {"id": "a", "type": "pattern_count_gte", "path": "f", "pattern": "x", "min_count": 0},
            "min_count",
            "at least 1, got 0",
        ),
        (
            {"id": "a", "type": "line_count_gte", "path": "f", "min_lines": "3"},
            "min_lines",
            "expected integer, got a string",
        ),
        (
            {"id": "a", "type": "file_contains", "path": "f", "pattern": "(unclosed"},
            "pattern",
            "not a valid regex",
        ),
        (
            {"id": "a", "type": "file_exists", "path": "f", "colour": "red"},
            "colour",
            "not a contract field",
        ),
        ({"id": "a", "type": "file_exists", "path": ""}, "path", "must not be empty"),
        (
            {"id": "a", "type": "sqlite_table_has_rows", "path": "f", "table": "a b"},
            "table",
            "not a plain SQL identifier",
        ),
    ],
)
def test_errors_name_the_criterion_id_and_the_field(
    criterion: dict[str, Any], field: str, words: str
) -> None:
    ok = {"id": "first", "type": "file_exists", "path": "ok"}
    error = error_of(data(ok, criterion), source="c.json")
    assert error.criterion == "'a' (#2)"
    assert error.field == field
    assert words in str(error)
    assert str(error).startswith(f"c.json: criterion 'a' (#2): field '{field}': ")


def test_a_criterion_without_an_id_is_named_by_its_position() -> None:
    error = error_of(data({"type": "file_exists", "path": "f"}))
    assert (error.criterion, error.field) == ("#1", "id")


def test_duplicate_ids_are_refused() -> None:
    one = {"id": "same", "type": "file_exists", "path": "a"}
    error = error_of(data(one, {**one, "path": "b"}))
    assert (error.criterion, error.field) == ("'same' (#2)", "id")
    assert "duplicate id: criterion #1" in str(error)


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({"task_id": "t"}, "success_criteria", "missing the required field"),
        ({"success_criteria": []}, "task_id", "missing the required field"),
        (data(unverifiable_claims="emailed"), "unverifiable_claims", "expected array"),
        (data(unverifiable_claims=[""]), "unverifiable_claims[0]", "must not be empty"),
        (data(agent_id=7), "agent_id", "expected string or null"),
        (data(notes="x"), "notes", "not a contract field"),
    ],
)
def test_top_level_errors_name_the_field(payload: object, field: str, words: str) -> None:
    error = error_of(payload)
    assert error.criterion is None
    assert error.field == field
    assert words in str(error)


def test_a_contract_that_is_not_an_object() -> None:
    assert "got an array" in str(error_of([1, 2]))


def test_load_contract_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="cannot read the contract"):
        load_contract(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ContractError, match="not valid JSON at line 1"):
        load_contract(bad)


# -- the rubric ------------------------------------------------------------------------------


def result(status: str, check_id: str = "c") -> CriterionResult:
    return CriterionResult(
        check_id=check_id, type="file_exists", status=status, evidence=f"ev-{status}"
    )


def contract(claims: tuple[str, ...] = ()) -> Contract:
    return Contract(task_id="t", agent_id="agent", unverifiable_claims=claims)


RUBRIC_CASES = [
    # (statuses, claims, integrity problems, verdict, words in the reason)
    (["pass", "pass"], (), (), "PASS", "PASS: all 2 checks passed"),
    (["pass"], (), (), "PASS", "PASS: all 1 check passed"),
    (["pass", "fail"], (), (), "FAIL", "FAIL: 1 of 2 checks failed"),
    (["fail", "error"], (), (), "FAIL", "FAIL: 1 of 2 checks failed"),
    (["fail"], ("sent the email",), (), "FAIL", "unverifiable: 'sent the email'"),
    (["pass", "error"], (), (), "FLAG", "FLAG: 1 of 2 checks could not run"),
    (["error"], ("x",), (), "FLAG", "1 of 1 check could not run; 1 claim cannot be verified"),
    (["pass"], ("sent the email",), (), "FLAG", "FLAG: no check failed, but 1 claim cannot be"),
    ([], (), (), "FLAG", "FLAG: nothing was checkable"),
    ([], ("a", "b"), (), "FLAG", "2 claims cannot be verified; nothing was checkable"),
    (
        ["pass"],
        (),
        ("artifact 'r.md': content sha256 mismatch",),
        "FAIL",
        "FAIL: 1 hash check failed - tampered: artifact 'r.md'",
    ),
    (["fail"], (), ("bundle_hash: x",), "FAIL", "FAIL: 1 hash check failed; 1 of 1 check failed"),
]


@pytest.mark.parametrize(("statuses", "claims", "problems", "verdict", "words"), RUBRIC_CASES)
def test_the_rubric(
    statuses: list[str],
    claims: tuple[str, ...],
    problems: tuple[str, ...],
    verdict: str,
    words: str,
) -> None:
    results = [result(status, f"c{i}") for i, status in enumerate(statuses)]
    answer = decide(contract(claims), results, integrity_problems=problems)
    assert answer.verdict == verdict
    assert words in answer.reason
    assert answer.reason.startswith(f"{verdict}: {answer.summary}")
    # The reason lists the evidence of every check, failures first.
    for i, status in enumerate(statuses):
        assert f"[c{i}] {status} (file_exists): ev-{status}" in answer.reason
    if "fail" in statuses and "pass" in statuses:
        assert answer.reason.index("] fail") < answer.reason.index("] pass")
    assert answer.check_results == tuple(results)
    assert answer.unverifiable_claims == claims
    assert (answer.task_id, answer.agent_id) == ("t", "agent")
    assert ContractVerdict.from_dict(answer.to_dict()) == answer


@settings(max_examples=200, deadline=None)
@given(
    statuses=st.lists(st.sampled_from(["pass", "fail", "error"]), max_size=6),
    claims=st.lists(st.text(min_size=1, max_size=5), max_size=2),
    tampered=st.booleans(),
)
def test_the_rubric_as_a_rule(statuses: list[str], claims: list[str], tampered: bool) -> None:
    results = [result(status, f"c{i}") for i, status in enumerate(statuses)]
    problems = ("artifact 'x': tampered",) if tampered else ()
    verdict = decide(contract(tuple(claims)), results, integrity_problems=problems).verdict
    if tampered or "fail" in statuses:
        assert verdict == "FAIL"
    elif "error" in statuses or claims or not statuses:
        assert verdict == "FLAG"
    else:
        assert verdict == "PASS"


def test_verify_json_has_the_stable_keys() -> None:
    document = decide(contract(("c",)), [result("pass")]).to_dict()
    assert {"verdict", "reason", "check_results", "unverifiable_claims"} <= set(document)
    assert set(document["check_results"][0]) >= {"check_id", "type", "status", "evidence"}
    assert json.loads(json.dumps(document)) == document


def test_a_verdict_becomes_a_store_record() -> None:
    verdict = decide(contract(), [result("pass")], bundle_hash="abc")
    record = verdict.to_record(run_id="r1")
    assert record == {
        "agent_id": "agent",
        "task_id": "t",
        "verdict": "PASS",
        "reason": verdict.reason,
        "bundle_hash": "abc",
        "run_id": "r1",
    }
    assert verdict.to_record(agent_id="other")["agent_id"] == "other"
