"""Loading and validating contracts against the published JSON Schema.

Two passes, as for eval sets: the schema (shape and types), then what a schema cannot say
(unique ids, fields that belong to another check type, paths that leave the base path,
patterns that compile). Every failure is one `ContractError` naming the criterion and field.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final, cast

import jsonschema
import regex

from verdryx_core.addons.contracts.model import CHECK_TYPES, Contract
from verdryx_core.addons.contracts.paths import lexical_problem
from verdryx_core.addons.errors import ContractError
from verdryx_core.untrusted.json_input import (
    StrictJSONError,
    check_strict,
    item_label,
    json_kind,
    parse_json_strict,
)

__all__ = [
    "contract_from_data",
    "contract_schema",
    "load_contract",
    "parse_contract",
    "pattern_flags",
]

#: The optional fields each check type takes; any other is a mistake worth naming.
_TYPE_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "file_exists": frozenset(),
    "file_nonempty": frozenset(),
    "file_contains": frozenset({"pattern"}),
    "pattern_count_gte": frozenset({"pattern", "min_count"}),
    "dir_exists": frozenset(),
    "json_valid": frozenset(),
    "line_count_gte": frozenset({"min_lines"}),
    "sqlite_table_has_rows": frozenset({"table", "min_rows"}),
    "path_absent": frozenset(),
}
_TYPED_FIELDS: Final = frozenset().union(*_TYPE_FIELDS.values())


@cache
def contract_schema() -> dict[str, Any]:
    """The published contract JSON Schema (packaged with verdryx_core)."""
    text = (
        resources.files("verdryx_core.addons.contracts")
        .joinpath("contract.schema.json")
        .read_text()
    )
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(contract_schema())


def pattern_flags(check_type: str) -> int:
    """pattern_count_gte counts line-anchored patterns, so '^' and '$' match at every line."""
    flags = regex.VERSION0
    if check_type == "pattern_count_gte":
        flags |= regex.MULTILINE
    return flags


def load_contract(path: str | Path) -> Contract:
    """Read and validate a contract file; raises `ContractError` on any problem."""
    path = Path(path)
    try:
        # utf-8-sig: a byte order mark (Windows editors add one) is not an error.
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(str(path), f"cannot read the contract: {exc}") from None
    return parse_contract(text, source=str(path))


def parse_contract(text: str | bytes, *, source: str = "contract") -> Contract:
    """Parse contract JSON text strictly (`parse_json_strict`) and validate it."""
    try:
        data = parse_json_strict(text)
    except StrictJSONError as exc:
        raise ContractError(source, str(exc)) from None
    return contract_from_data(data, source=source)


def contract_from_data(
    data: object, *, source: str = "contract", default_task_id: str | None = None
) -> Contract:
    """Validate and build; `default_task_id` fills a missing task_id (an eval case's id)."""
    if not isinstance(data, Mapping):
        raise ContractError(
            source, f"a contract is a JSON object with 'success_criteria', got {json_kind(data)}"
        )
    if default_task_id is not None and "task_id" not in data:
        data = {**data, "task_id": default_task_id}
    try:
        check_strict(data)
    except StrictJSONError as exc:
        raise ContractError(source, str(exc)) from None
    _check_schema(data, source)
    criteria: list[Mapping[str, Any]] = list(data["success_criteria"])
    seen: dict[str, int] = {}
    for index, criterion in enumerate(criteria):
        label = item_label(criterion, index)

        def fail(field: str, message: str, label: str = label) -> ContractError:
            return ContractError(source, message, criterion=label, field=field)

        if criterion["id"] in seen:
            raise fail(
                "id",
                f"duplicate id: criterion #{seen[criterion['id']] + 1} already uses it "
                "(ids name checks in verdicts, so they must be unique)",
            )
        seen[criterion["id"]] = index
        check_type = criterion["type"]
        misplaced = sorted(_TYPED_FIELDS & set(criterion) - _TYPE_FIELDS[check_type])
        if misplaced:
            raise fail(misplaced[0], f"does not apply to a {check_type} check; remove it")
        problem = lexical_problem(criterion["path"])
        if problem is not None:
            raise fail("path", problem)
        if "pattern" in criterion:
            problem = _pattern_problem(criterion["pattern"], check_type)
            if problem is not None:
                raise fail("pattern", f"{criterion['pattern']!r} is not a valid regex: {problem}")
    return Contract.from_dict(data)


def _pattern_problem(pattern: str, check_type: str) -> str | None:
    """Why `pattern` is refused, or None. It must mean in `regex` what it means in stdlib
    `re`: `regex` reads more syntax (POSIX classes, `\\p{L}`), and `re` warns where the two
    would read a set differently, so both must accept it without that warning."""
    stdlib_flags = re.MULTILINE if check_type == "pattern_count_gte" else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            re.compile(pattern, stdlib_flags)
        regex.compile(pattern, flags=pattern_flags(check_type))
    except FutureWarning as exc:
        return f"ambiguous ({exc}); escape '[' inside a character class as '\\['"
    except (re.error, regex.error) as exc:
        return str(exc)
    return None


def _check_schema(data: Mapping[str, Any], source: str) -> None:
    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    # The first criterion in file order, and the deepest error in it, is what a reader fixes.
    error = min(errors, key=lambda e: (_order(e), -len(e.absolute_path)))
    location = list(error.absolute_path)
    criterion: str | None = None
    field: str | None = None
    if len(location) >= 2 and location[0] == "success_criteria" and isinstance(location[1], int):
        index = location[1]
        criterion = item_label(data["success_criteria"][index], index)
        if len(location) >= 3:
            field = str(location[2])
    elif location:
        field = "".join(str(part) if i == 0 else f"[{part}]" for i, part in enumerate(location))
    if error.validator == "required":
        field = _missing(error)
    elif error.validator == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        extras = sorted(str(key) for key in error.instance if key not in known)
        field = extras[0] if extras else field
    raise ContractError(source, _describe(error, field), criterion=criterion, field=field)


def _order(error: jsonschema.ValidationError) -> tuple[int, int]:
    location = list(error.absolute_path)
    if len(location) >= 2 and location[0] == "success_criteria" and isinstance(location[1], int):
        return (1, location[1])
    return (0, 0)


def _missing(error: jsonschema.ValidationError) -> str:
    # A `required` error: its validator value is the list of required names.
    names = cast(list[Any], error.validator_value)
    for name in names:
        if isinstance(error.instance, Mapping) and name not in error.instance:
            return str(name)
    return str(names[0])


def _describe(error: jsonschema.ValidationError, field: str | None) -> str:
    validator = error.validator
    if validator == "required":
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        check_type = instance.get("type")
        if field in _TYPED_FIELDS and isinstance(check_type, str):
            return f"a {check_type} check requires the field '{field}'"
        return f"missing the required field '{field}'"
    if validator == "enum" and field == "type":
        return f"{error.instance!r} is not a check type; expected one of {', '.join(CHECK_TYPES)}"
    if validator == "additionalProperties":
        return "is not a contract field; remove it or check its spelling"
    if validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected_text}, got {json_kind(error.instance)}"
    if validator == "minimum":
        return f"must be at least {error.validator_value}, got {error.instance!r}"
    if validator == "maximum":
        return f"must be at most {error.validator_value}, got {error.instance!r}"
    if validator == "maxLength":
        return f"is longer than the {error.validator_value} characters allowed"
    if validator == "maxItems":
        return f"has more than the {error.validator_value} items allowed"
    if validator == "minLength":
        return "must not be empty"
    if validator == "pattern" and field == "table":
        return (
            f"{error.instance!r} is not a plain SQL identifier (letters, digits and '_', "
            "not starting with a digit); quoted or dotted names are not accepted"
        )
    return error.message
