"""Loading and validating `*.evalset.json` files.

Validation runs in two passes: the published JSON Schema (shape and types), then the rules a
schema cannot say (unique ids, fields that belong to one grader, patterns that compile).
Every failure is one `EvalSetError` naming the file, the case and the field.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

import fastjsonschema
import jsonschema

from verdryx_core.errors import EvalSetError
from verdryx_core.graders.regex import compile_pattern
from verdryx_core.jsonwords import item_label, json_kind
from verdryx_core.model import GRADER_KINDS, EvalCase

__all__ = ["EvalSet", "evalset_schema", "load_evalset"]

_TOOL_FIELDS = ("tools", "expected_tools")


@cache
def evalset_schema() -> dict[str, Any]:
    """The published eval set JSON Schema (also what the docs are checked against)."""
    text = resources.files("verdryx_core.schemas").joinpath("evalset.schema.json").read_text()
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(evalset_schema())


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalSet:
    id: str
    cases: tuple[EvalCase, ...]
    path: Path | None = None

    @classmethod
    def load(cls, path: str | Path) -> EvalSet:
        return load_evalset(path)


def load_evalset(path: str | Path) -> EvalSet:
    """Read, validate and build an eval set; raises `EvalSetError` on any problem."""
    path = Path(path)
    try:
        # utf-8-sig: editors on Windows save a byte order mark, which is not an error.
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSetError(path, f"cannot read: {exc}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise EvalSetError(
            path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except _NonFiniteNumber as exc:
        raise EvalSetError(
            path,
            f"not valid JSON: {exc.args[0]} is not a JSON number (JSON has no NaN or "
            "Infinity); use a finite number",
        ) from None
    return evalset_from_data(data, path)


class _NonFiniteNumber(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON does not have; a NaN min_score would
    # pass every range check (all comparisons with NaN are false).
    raise _NonFiniteNumber(name)


def evalset_from_data(data: object, path: str | Path) -> EvalSet:
    if not isinstance(data, dict):
        raise EvalSetError(
            path, f"top level must be a JSON object with 'id' and 'cases', got {json_kind(data)}"
        )
    _check_schema(data, path)
    cases_data: list[dict[str, Any]] = data["cases"]
    seen: dict[str, int] = {}
    cases: list[EvalCase] = []
    for index, case_data in enumerate(cases_data):
        case_id = case_data["id"]
        if case_id in seen:
            raise EvalSetError(
                path,
                f"duplicate id: case #{seen[case_id] + 1} already uses it "
                "(ids must be unique in a set so runs can be compared case by case)",
                case=item_label(case_data, index),
                field="id",
            )
        seen[case_id] = index
        _check_case_rules(case_data, index, path)
        cases.append(EvalCase.from_dict(case_data))
    return EvalSet(id=data["id"], cases=tuple(cases), path=Path(path))


@cache
def _fast_validator() -> Callable[[Any], Any]:
    return fastjsonschema.compile(evalset_schema())


def _check_schema(data: Mapping[str, Any], path: str | Path) -> None:
    # The compiled validator is ~20x faster on a valid file (thousands of cases in CI); on a
    # failure, jsonschema finds every error so the message can name the first case.
    try:
        _fast_validator()(data)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    # Report the first case in file order, so the message points where a reader looks first.
    error = min(errors, key=lambda e: (_sort_key(e), -len(e.absolute_path)))
    location = list(error.absolute_path)
    case: str | None = None
    parts: list[Any] = location
    if len(location) >= 2 and location[0] == "cases" and isinstance(location[1], int):
        index = location[1]
        case = item_label(data["cases"][index], index)
        parts = location[2:]
    # `required` and `additionalProperties` are reported on the object that holds the field;
    # the field a reader must fix is the missing or the unknown one.
    named = _named_field(error)
    if named is not None:
        parts = [*parts, named]
    field = (
        "".join(str(part) if i == 0 else f"[{part}]" for i, part in enumerate(parts))
        if parts
        else None
    )
    raise EvalSetError(path, _describe(error, field), case=case, field=field)


def _named_field(error: jsonschema.ValidationError) -> str | None:
    instance = error.instance
    if not isinstance(instance, Mapping):
        return None
    if error.validator == "required":
        # A `required` error: its validator value is the list of required names.
        missing = [name for name in cast(list[Any], error.validator_value) if name not in instance]
        return missing[0] if missing else None
    if error.validator == "additionalProperties":
        known = _schema(error).get("properties", {})
        unknown = [name for name in instance if name not in known]
        return unknown[0] if unknown else None
    return None


def _schema(error: jsonschema.ValidationError) -> Mapping[str, Any]:
    """The (sub)schema that failed: always an object in verdryx's eval set schema."""
    return cast(Mapping[str, Any], error.schema)


def _sort_key(error: jsonschema.ValidationError) -> tuple[int, int]:
    location = list(error.absolute_path)
    if len(location) >= 2 and location[0] == "cases" and isinstance(location[1], int):
        return (1, location[1])
    return (0, 0)


def _describe(error: jsonschema.ValidationError, field: str | None) -> str:
    validator = error.validator
    if validator == "required":
        return "required but missing; add it"
    if validator == "enum" and field == "grader":
        return f"{error.instance!r} is not a grader; expected one of {', '.join(GRADER_KINDS)}"
    if validator == "additionalProperties":
        known = sorted(_schema(error).get("properties", {}))
        close = difflib.get_close_matches(field or "", known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"not a known field; {hint}remove it or use one of {', '.join(known)}"
    if validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected_text}, got {json_kind(error.instance)}"
    if validator == "minItems" and list(error.absolute_path) == ["cases"]:
        return "the eval set has no cases; add at least one"
    if validator == "pattern" and field == "id":
        return (
            f"{error.instance!r} is not a usable case id: no whitespace, ':' or brackets "
            "(it becomes part of the pytest node id)"
        )
    return error.message


def _check_case_rules(case: Mapping[str, Any], index: int, path: str | Path) -> None:
    grader = case.get("grader", "exact")
    label = item_label(case, index)

    def fail(field: str, message: str) -> EvalSetError:
        return EvalSetError(path, message, case=label, field=field)

    if grader == "tool_trace":
        for name in _TOOL_FIELDS:
            if name not in case:
                raise fail(name, f"grader 'tool_trace' requires the field '{name}'")
        output = case.get("output")
        if output is not None and not isinstance(output, list):
            raise fail("output", "a recorded tool_trace output is the list of tool names called")
    else:
        for name in _TOOL_FIELDS:
            if name in case:
                raise fail(name, f"only valid with grader 'tool_trace' (this case is {grader!r})")
        if isinstance(case.get("output"), list):
            raise fail("output", f"a recorded output is a string for grader {grader!r}")
    if grader in ("exact", "regex") and "expected" not in case:
        raise fail("expected", f"grader {grader!r} requires the field 'expected'")
    if grader == "regex":
        try:
            compile_pattern(case["expected"])
        except ValueError as exc:
            raise fail("expected", str(exc)) from None
    if grader == "llm_judge" and not case.get("rubric"):
        raise fail("rubric", "grader 'llm_judge' requires a non-empty 'rubric'")
    if grader == "contract":
        if "contract" not in case:
            raise fail("contract", "grader 'contract' requires the field 'contract'")
        # A bad contract is a collection error now, not an error at grading time.
        from verdryx_core.contracts.validate import contract_from_data
        from verdryx_core.errors import VerdryxError

        try:
            contract_from_data(case["contract"], source="contract", default_task_id=case["id"])
        except VerdryxError as exc:
            raise fail("contract", str(exc)) from None
    elif "contract" in case:
        raise fail("contract", f"only valid with grader 'contract' (this case is {grader!r})")
